package testutil

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"testing"
)

// CallEveryMethod calls every exported method of v (a pointer: a zero value
// or nil) with zero arguments but a live context, bounded by Timeout (and
// no variadic ones). It fails t if one panics, or blocks past Timeout (the
// calls after it are not made: a panic recovered may have left a lock
// held), or if a method that returns an error returns nil (a zero value
// must fail clearly, not succeed silently) or an error that does not wrap
// want. It returns how many methods it called, for the caller to require
// that some were.
func CallEveryMethod(t *testing.T, v any, want error) int {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), Timeout)
	defer cancel()
	rv := reflect.ValueOf(v)
	errType := reflect.TypeFor[error]()
	for i := range rv.NumMethod() {
		m := rv.Type().Method(i)
		ft := m.Type
		var args []reflect.Value
		n := ft.NumIn() - 1 // the receiver
		if ft.IsVariadic() {
			n--
		}
		for j := 1; j <= n; j++ {
			in := ft.In(j)
			if in == reflect.TypeFor[context.Context]() {
				args = append(args, reflect.ValueOf(ctx))
			} else {
				args = append(args, reflect.Zero(in))
			}
		}
		name := fmt.Sprintf("(%T).%s", v, m.Name)
		done := make(chan struct{})
		var out []reflect.Value
		var panicked any
		go func() {
			defer close(done)
			out, panicked = call(rv.Method(i), args)
		}()
		select {
		case <-done:
		case <-ctx.Done():
			t.Errorf("%s has not returned within %v: the calls after it are not made", name, Timeout)
			return rv.NumMethod() // the block is the failure, not a count too low
		}
		if panicked != nil {
			t.Errorf("%s panicked: %v", name, panicked)
			continue
		}
		for k, o := range out {
			if ft.Out(k) != errType {
				continue
			}
			err, _ := o.Interface().(error)
			if !errors.Is(err, want) {
				t.Errorf("%s = %v, want an error wrapping %v", name, err, want)
			}
		}
	}
	return rv.NumMethod()
}

func call(f reflect.Value, args []reflect.Value) (out []reflect.Value, panicked any) {
	defer func() { panicked = recover() }()
	return f.Call(args), nil
}
