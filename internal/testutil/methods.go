package testutil

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"testing"
)

// CallEveryMethod calls every exported method of v (a pointer: a zero value
// or nil) with zero arguments but a live context (and no variadic ones), and
// fails t if one panics, or returns a non-nil error that does not wrap
// want. It returns the names of the methods it called, for the caller to
// see that none was missed.
func CallEveryMethod(t *testing.T, v any, want error) []string {
	t.Helper()
	rv := reflect.ValueOf(v)
	var called []string
	for i := range rv.NumMethod() {
		m := rv.Type().Method(i)
		called = append(called, m.Name)
		ft := m.Type
		var args []reflect.Value
		n := ft.NumIn() - 1 // the receiver
		if ft.IsVariadic() {
			n--
		}
		for j := 1; j <= n; j++ {
			in := ft.In(j)
			if in == reflect.TypeFor[context.Context]() {
				args = append(args, reflect.ValueOf(context.Background()))
			} else {
				args = append(args, reflect.Zero(in))
			}
		}
		name := fmt.Sprintf("(%T).%s", v, m.Name)
		out, panicked := call(rv.Method(i), args)
		if panicked != nil {
			t.Errorf("%s panicked: %v", name, panicked)
			continue
		}
		for _, o := range out {
			if err, ok := o.Interface().(error); ok && err != nil && !errors.Is(err, want) {
				t.Errorf("%s = %v, want an error wrapping %v", name, err, want)
			}
		}
	}
	return called
}

func call(f reflect.Value, args []reflect.Value) (out []reflect.Value, panicked any) {
	defer func() { panicked = recover() }()
	return f.Call(args), nil
}
