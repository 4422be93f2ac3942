package recipes_test

import (
	"testing"

	"github.com/gocurator/curator/framework"
	"github.com/gocurator/curator/internal/testutil"
	"github.com/gocurator/curator/recipes"
)

// Misuse never crashes the process: every exported method of every owner
// type, and of every recipe value, called on a zero value and on a nil
// pointer, returns (its errors wrapping framework.ErrInvalidArgument) instead of
// panicking. Nothing of the server is needed: none of them gets that far.
func TestZeroValuesAndNilReceivers(t *testing.T) {
	for _, v := range []any{
		&recipes.Handle{}, (*recipes.Handle)(nil),
		&recipes.ReadWriteHandle{}, (*recipes.ReadWriteHandle)(nil),
		&recipes.Lease{}, (*recipes.Lease)(nil),
		&recipes.InterProcessSemaphoreMutex{}, (*recipes.InterProcessSemaphoreMutex)(nil),
		&recipes.InterProcessMultiLock{}, (*recipes.InterProcessMultiLock)(nil),
		&recipes.LeaderLatch{}, (*recipes.LeaderLatch)(nil),
		&recipes.LeaderSelector{}, (*recipes.LeaderSelector)(nil),
		&recipes.InterProcessMutex{}, (*recipes.InterProcessMutex)(nil),
		&recipes.InterProcessReadWriteLock{}, (*recipes.InterProcessReadWriteLock)(nil),
		&recipes.InterProcessSemaphoreV2{}, (*recipes.InterProcessSemaphoreV2)(nil),
		&recipes.SharedCount{}, (*recipes.SharedCount)(nil),
		&recipes.SharedValue{}, (*recipes.SharedValue)(nil),
	} {
		if n := testutil.CallEveryMethod(t, v, framework.ErrInvalidArgument); n == 0 {
			t.Errorf("%T: no exported method called", v)
		}
	}
	// What they hand out is as safe: the halves of a zero read-write owner,
	// the handle of a zero mutex.
	for _, v := range []any{(&recipes.ReadWriteHandle{}).ReadLock(), (&recipes.ReadWriteHandle{}).WriteLock(),
		(&recipes.InterProcessMutex{}).NewHandle(), (&recipes.InterProcessReadWriteLock{}).NewHandle().WriteLock()} {
		if n := testutil.CallEveryMethod(t, v, framework.ErrInvalidArgument); n == 0 {
			t.Errorf("%T: no exported method called", v)
		}
	}
}
