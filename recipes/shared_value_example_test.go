package recipes_test

import (
	"fmt"

	"github.com/gocurator/curator/recipes"
)

// A setting every process watches; a change made only on the value read.
func ExampleSharedValue() {
	client, ctx, done, err := connect()
	if err != nil {
		fmt.Println(err)
		return
	}
	defer done()

	mode, err := recipes.NewSharedValue(client, "/examples/shared/mode", []byte("normal"))
	if err != nil {
		fmt.Println(err)
		return
	}
	if err := mode.Start(ctx); err != nil {
		fmt.Println(err)
		return
	}
	defer mode.Close()
	if err := mode.SetValue(ctx, []byte("normal")); err != nil {
		fmt.Println(err)
		return
	}
	read := mode.VersionedValue()
	ok, err := mode.TrySetValue(ctx, read, []byte("read-only"))
	fmt.Println(string(read.Value), "->", string(mode.Value()), ok, err)
	ok, err = mode.TrySetValue(ctx, read, []byte("maintenance")) // read is stale now
	fmt.Println("stale:", ok, err, string(mode.Value()))
	// Output:
	// normal -> read-only true <nil>
	// stale: false <nil> read-only
}
