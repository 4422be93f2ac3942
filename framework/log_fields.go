package framework

import (
	"bytes"
	"encoding/json"
	"fmt"
	"time"

	"go.uber.org/zap/zapcore"
)

// The client's log lines are written by the outbox's goroutine, a moment
// after the call that logs them (outbox.go). A field that encodes itself
// only when written (a Stringer, an ObjectMarshaler or ArrayMarshaler, an
// error, a value zap.Any reflects over) or that refers to the caller's
// bytes would then be read on another goroutine, after the caller may have
// changed it: a data race, or a line that prints a later value. So each
// such field is encoded at the call, into a record of what it added, and
// the record is what is queued: written later, it adds exactly that. A
// value zap reflects over is encoded to JSON at the call (what zap's
// encoders do with it, unless the sink's config names another reflected
// encoder).

// freeze returns fields with every field that would be encoded later, or
// refers to the caller's memory, encoded now (fields itself is not
// changed). A field whose encoding panics is recorded as its key +
// "Error", as zap records a Stringer's panic.
func freeze(fields []zapcore.Field) []zapcore.Field {
	out := make([]zapcore.Field, len(fields))
	for i, f := range fields {
		switch f.Type {
		case zapcore.ArrayMarshalerType, zapcore.ObjectMarshalerType, zapcore.InlineMarshalerType, zapcore.ReflectType,
			zapcore.StringerType, zapcore.ErrorType, zapcore.BinaryType, zapcore.ByteStringType:
			out[i] = zapcore.Field{Type: zapcore.InlineMarshalerType, Interface: record(f)}
		default: // a value held in the field itself
			out[i] = f
		}
	}
	return out
}

// record encodes f now, into a record of what it adds.
func record(f zapcore.Field) (rec *objectRecord) {
	defer func() {
		if p := recover(); p != nil {
			rec = &objectRecord{}
			rec.AddString(f.Key+"Error", fmt.Sprintf("PANIC=%v", p))
		}
	}()
	rec = &objectRecord{}
	f.AddTo(rec)
	return rec
}

// recorded is what was added to an encoder of type E, in order, to be
// replayed on another.
type recorded[E any] struct{ calls []func(E) }

func (r *recorded[E]) add(call func(E)) { r.calls = append(r.calls, call) }

func (r *recorded[E]) replay(enc E) {
	for _, call := range r.calls {
		call(enc)
	}
}

// objectRecord is what a field added to an object encoder, replayed by
// MarshalLogObject (an inline field adds it where the field was).
type objectRecord struct {
	recorded[zapcore.ObjectEncoder]
}

// MarshalLogObject adds what was recorded to enc.
func (r *objectRecord) MarshalLogObject(enc zapcore.ObjectEncoder) error {
	r.replay(enc)
	return nil
}

// arrayRecord is what was appended to an array encoder, replayed by
// MarshalLogArray.
type arrayRecord struct{ recorded[zapcore.ArrayEncoder] }

// MarshalLogArray appends what was recorded to enc.
func (r *arrayRecord) MarshalLogArray(enc zapcore.ArrayEncoder) error {
	r.replay(enc)
	return nil
}

// recordArray, recordObject and recordReflected encode a nested value now:
// an array, an object, or a value zap reflects over (to JSON).
func recordArray(m zapcore.ArrayMarshaler) (*arrayRecord, error) {
	n := &arrayRecord{}
	return n, m.MarshalLogArray(n)
}

func recordObject(m zapcore.ObjectMarshaler) (*objectRecord, error) {
	n := &objectRecord{}
	return n, m.MarshalLogObject(n)
}

func recordReflected(v any) (json.RawMessage, error) { return json.Marshal(v) }

func (r *objectRecord) AddArray(k string, m zapcore.ArrayMarshaler) error {
	n, err := recordArray(m)
	r.add(func(e zapcore.ObjectEncoder) { _ = e.AddArray(k, n) })
	return err
}

func (r *objectRecord) AddObject(k string, m zapcore.ObjectMarshaler) error {
	n, err := recordObject(m)
	r.add(func(e zapcore.ObjectEncoder) { _ = e.AddObject(k, n) })
	return err
}

func (r *objectRecord) AddReflected(k string, v any) error {
	b, err := recordReflected(v)
	if err == nil {
		r.add(func(e zapcore.ObjectEncoder) { _ = e.AddReflected(k, b) })
	}
	return err
}

func (r *objectRecord) AddBinary(k string, v []byte) {
	v = bytes.Clone(v)
	r.add(func(e zapcore.ObjectEncoder) { e.AddBinary(k, v) })
}

func (r *objectRecord) AddByteString(k string, v []byte) {
	v = bytes.Clone(v)
	r.add(func(e zapcore.ObjectEncoder) { e.AddByteString(k, v) })
}

func (r *objectRecord) AddBool(k string, v bool) {
	r.add(func(e zapcore.ObjectEncoder) { e.AddBool(k, v) })
}
func (r *objectRecord) AddComplex128(k string, v complex128) {
	r.add(func(e zapcore.ObjectEncoder) { e.AddComplex128(k, v) })
}
func (r *objectRecord) AddComplex64(k string, v complex64) {
	r.add(func(e zapcore.ObjectEncoder) { e.AddComplex64(k, v) })
}
func (r *objectRecord) AddDuration(k string, v time.Duration) {
	r.add(func(e zapcore.ObjectEncoder) { e.AddDuration(k, v) })
}
func (r *objectRecord) AddFloat64(k string, v float64) {
	r.add(func(e zapcore.ObjectEncoder) { e.AddFloat64(k, v) })
}
func (r *objectRecord) AddFloat32(k string, v float32) {
	r.add(func(e zapcore.ObjectEncoder) { e.AddFloat32(k, v) })
}
func (r *objectRecord) AddInt(k string, v int) {
	r.add(func(e zapcore.ObjectEncoder) { e.AddInt(k, v) })
}
func (r *objectRecord) AddInt64(k string, v int64) {
	r.add(func(e zapcore.ObjectEncoder) { e.AddInt64(k, v) })
}
func (r *objectRecord) AddInt32(k string, v int32) {
	r.add(func(e zapcore.ObjectEncoder) { e.AddInt32(k, v) })
}
func (r *objectRecord) AddInt16(k string, v int16) {
	r.add(func(e zapcore.ObjectEncoder) { e.AddInt16(k, v) })
}
func (r *objectRecord) AddInt8(k string, v int8) {
	r.add(func(e zapcore.ObjectEncoder) { e.AddInt8(k, v) })
}
func (r *objectRecord) AddString(k, v string) {
	r.add(func(e zapcore.ObjectEncoder) { e.AddString(k, v) })
}
func (r *objectRecord) AddTime(k string, v time.Time) {
	r.add(func(e zapcore.ObjectEncoder) { e.AddTime(k, v) })
}
func (r *objectRecord) AddUint(k string, v uint) {
	r.add(func(e zapcore.ObjectEncoder) { e.AddUint(k, v) })
}
func (r *objectRecord) AddUint64(k string, v uint64) {
	r.add(func(e zapcore.ObjectEncoder) { e.AddUint64(k, v) })
}
func (r *objectRecord) AddUint32(k string, v uint32) {
	r.add(func(e zapcore.ObjectEncoder) { e.AddUint32(k, v) })
}
func (r *objectRecord) AddUint16(k string, v uint16) {
	r.add(func(e zapcore.ObjectEncoder) { e.AddUint16(k, v) })
}
func (r *objectRecord) AddUint8(k string, v uint8) {
	r.add(func(e zapcore.ObjectEncoder) { e.AddUint8(k, v) })
}
func (r *objectRecord) AddUintptr(k string, v uintptr) {
	r.add(func(e zapcore.ObjectEncoder) { e.AddUintptr(k, v) })
}
func (r *objectRecord) OpenNamespace(k string) {
	r.add(func(e zapcore.ObjectEncoder) { e.OpenNamespace(k) })
}

func (r *arrayRecord) AppendArray(m zapcore.ArrayMarshaler) error {
	n, err := recordArray(m)
	r.add(func(e zapcore.ArrayEncoder) { _ = e.AppendArray(n) })
	return err
}

func (r *arrayRecord) AppendObject(m zapcore.ObjectMarshaler) error {
	n, err := recordObject(m)
	r.add(func(e zapcore.ArrayEncoder) { _ = e.AppendObject(n) })
	return err
}

func (r *arrayRecord) AppendReflected(v any) error {
	b, err := recordReflected(v)
	if err == nil {
		r.add(func(e zapcore.ArrayEncoder) { _ = e.AppendReflected(b) })
	}
	return err
}

func (r *arrayRecord) AppendByteString(v []byte) {
	v = bytes.Clone(v)
	r.add(func(e zapcore.ArrayEncoder) { e.AppendByteString(v) })
}

func (r *arrayRecord) AppendBool(v bool) { r.add(func(e zapcore.ArrayEncoder) { e.AppendBool(v) }) }
func (r *arrayRecord) AppendComplex128(v complex128) {
	r.add(func(e zapcore.ArrayEncoder) { e.AppendComplex128(v) })
}
func (r *arrayRecord) AppendComplex64(v complex64) {
	r.add(func(e zapcore.ArrayEncoder) { e.AppendComplex64(v) })
}
func (r *arrayRecord) AppendDuration(v time.Duration) {
	r.add(func(e zapcore.ArrayEncoder) { e.AppendDuration(v) })
}
func (r *arrayRecord) AppendFloat64(v float64) {
	r.add(func(e zapcore.ArrayEncoder) { e.AppendFloat64(v) })
}
func (r *arrayRecord) AppendFloat32(v float32) {
	r.add(func(e zapcore.ArrayEncoder) { e.AppendFloat32(v) })
}
func (r *arrayRecord) AppendInt(v int)     { r.add(func(e zapcore.ArrayEncoder) { e.AppendInt(v) }) }
func (r *arrayRecord) AppendInt64(v int64) { r.add(func(e zapcore.ArrayEncoder) { e.AppendInt64(v) }) }
func (r *arrayRecord) AppendInt32(v int32) { r.add(func(e zapcore.ArrayEncoder) { e.AppendInt32(v) }) }
func (r *arrayRecord) AppendInt16(v int16) { r.add(func(e zapcore.ArrayEncoder) { e.AppendInt16(v) }) }
func (r *arrayRecord) AppendInt8(v int8)   { r.add(func(e zapcore.ArrayEncoder) { e.AppendInt8(v) }) }
func (r *arrayRecord) AppendString(v string) {
	r.add(func(e zapcore.ArrayEncoder) { e.AppendString(v) })
}
func (r *arrayRecord) AppendTime(v time.Time) {
	r.add(func(e zapcore.ArrayEncoder) { e.AppendTime(v) })
}
func (r *arrayRecord) AppendUint(v uint) { r.add(func(e zapcore.ArrayEncoder) { e.AppendUint(v) }) }
func (r *arrayRecord) AppendUint64(v uint64) {
	r.add(func(e zapcore.ArrayEncoder) { e.AppendUint64(v) })
}
func (r *arrayRecord) AppendUint32(v uint32) {
	r.add(func(e zapcore.ArrayEncoder) { e.AppendUint32(v) })
}
func (r *arrayRecord) AppendUint16(v uint16) {
	r.add(func(e zapcore.ArrayEncoder) { e.AppendUint16(v) })
}
func (r *arrayRecord) AppendUint8(v uint8) { r.add(func(e zapcore.ArrayEncoder) { e.AppendUint8(v) }) }
func (r *arrayRecord) AppendUintptr(v uintptr) {
	r.add(func(e zapcore.ArrayEncoder) { e.AppendUintptr(v) })
}
