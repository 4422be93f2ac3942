package recipes

import (
	"github.com/gocurator/curator/framework"
	"testing"

	"github.com/gocurator/curator/internal/testutil"
)

// Misuse never crashes the process: every exported method of every owner
// type, and of every recipe value, called on a zero value and on a nil
// pointer, returns (its errors wrapping framework.ErrInvalidArgument) instead of
// panicking. Nothing of the server is needed: none of them gets that far.
func TestZeroValuesAndNilReceivers(t *testing.T) {
	for _, v := range []any{
		&Handle{}, (*Handle)(nil),
		&ReadWriteHandle{}, (*ReadWriteHandle)(nil),
		&Lease{}, (*Lease)(nil),
		&InterProcessSemaphoreMutex{}, (*InterProcessSemaphoreMutex)(nil),
		&InterProcessMultiLock{}, (*InterProcessMultiLock)(nil),
		&LeaderLatch{}, (*LeaderLatch)(nil),
		&LeaderSelector{}, (*LeaderSelector)(nil),
		&InterProcessMutex{}, (*InterProcessMutex)(nil),
		&InterProcessReadWriteLock{}, (*InterProcessReadWriteLock)(nil),
		&InterProcessSemaphoreV2{}, (*InterProcessSemaphoreV2)(nil),
		&SharedCount{}, (*SharedCount)(nil),
	} {
		if n := testutil.CallEveryMethod(t, v, framework.ErrInvalidArgument); n == 0 {
			t.Errorf("%T: no exported method called", v)
		}
	}
	// What they hand out is as safe: the halves of a zero read-write owner,
	// the handle of a zero mutex.
	for _, v := range []any{(&ReadWriteHandle{}).ReadLock(), (&ReadWriteHandle{}).WriteLock(),
		(&InterProcessMutex{}).NewHandle(), (&InterProcessReadWriteLock{}).NewHandle().WriteLock()} {
		if n := testutil.CallEveryMethod(t, v, framework.ErrInvalidArgument); n == 0 {
			t.Errorf("%T: no exported method called", v)
		}
	}
}
