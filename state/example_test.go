package state_test

import (
	"fmt"

	"github.com/gocurator/curator/state"
)

func ExampleErrorPolicy() {
	for _, p := range []state.ErrorPolicy{state.StandardErrorPolicy{}, state.SessionErrorPolicy{}} {
		fmt.Printf("%T:", p)
		for _, s := range []state.ConnectionState{state.Connected, state.Suspended, state.Reconnected, state.Lost} {
			if p.IsErrorState(s) {
				fmt.Print(" ", s)
			}
		}
		fmt.Println()
	}
	// Output:
	// state.StandardErrorPolicy: SUSPENDED LOST
	// state.SessionErrorPolicy: LOST
}

func ExampleConnectionState_IsConnected() {
	for _, s := range []state.ConnectionState{state.Connected, state.Suspended, state.Reconnected, state.Lost, state.ReadOnly} {
		fmt.Println(s, s.IsConnected())
	}
	// Output:
	// CONNECTED true
	// SUSPENDED false
	// RECONNECTED true
	// LOST false
	// READ_ONLY true
}
