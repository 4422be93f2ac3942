package retry_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/gocurator/curator/retry"
)

func ExampleDo() {
	attempts := 0
	op := func(ctx context.Context) error {
		attempts++
		if attempts <= 2 {
			return fmt.Errorf("get /config: %w", zk.ErrConnectionClosed)
		}
		return nil
	}
	err := retry.Do(context.Background(), retry.NewNTimes(3, time.Millisecond), op,
		retry.OnRetry(func(err error, retryCount int, wait time.Duration) {
			fmt.Printf("retry %d after %v: %v\n", retryCount, wait, err)
		}))
	fmt.Println("attempts:", attempts, "err:", err)
	// Output:
	// retry 0 after 1ms: get /config: zk: connection closed
	// retry 1 after 1ms: get /config: zk: connection closed
	// attempts: 3 err: <nil>
}

func ExampleDo_notRetryable() {
	attempts := 0
	err := retry.Do(context.Background(), retry.NewForever(time.Second), func(ctx context.Context) error {
		attempts++
		return fmt.Errorf("create /lock: %w", zk.ErrNodeExists)
	})
	fmt.Println("attempts:", attempts, "err:", err)
	// Output:
	// attempts: 1 err: create /lock: zk: node already exists
}

func ExampleDo_cancel() {
	ctx, cancel := context.WithCancel(context.Background())
	err := retry.Do(ctx, retry.NewForever(time.Hour), func(ctx context.Context) error {
		return zk.ErrNoServer
	}, retry.OnRetry(func(error, int, time.Duration) { cancel() }))
	fmt.Println(errors.Is(err, context.Canceled), errors.Is(err, zk.ErrNoServer))
	// Output:
	// true true
}

func ExampleNewExponentialBackoff() {
	// A seeded source makes the random sleeps reproducible; production code
	// omits WithRand. Retry n sleeps between 1 and 2^(n+1)-1 times the base.
	p := retry.NewExponentialBackoff(100*time.Millisecond, 3, retry.WithRand(rand.NewPCG(2, 2)))
	for rc := range 5 {
		wait, ok := p.AllowRetry(rc, 0)
		fmt.Printf("retry %d: allowed=%v wait=%v\n", rc, ok, wait)
	}
	// Output:
	// retry 0: allowed=true wait=100ms
	// retry 1: allowed=true wait=200ms
	// retry 2: allowed=true wait=600ms
	// retry 3: allowed=false wait=0s
	// retry 4: allowed=false wait=0s
}

func ExampleNewBoundedExponentialBackoff() {
	p := retry.NewBoundedExponentialBackoff(time.Second, 5*time.Second, 50)
	wait, ok := p.AllowRetry(20, 0)
	fmt.Println(p.MaxRetries(), wait <= 5*time.Second, ok)
	// Output:
	// 29 true true
}

func ExampleNewSessionFailed() {
	p := retry.NewSessionFailed(retry.NewNTimes(3, time.Second))
	fmt.Println(retry.Retryable(p, zk.ErrConnectionClosed))
	fmt.Println(retry.Retryable(p, fmt.Errorf("lock: %w", zk.ErrSessionExpired)))
	fmt.Println(retry.IsRetryable(zk.ErrSessionExpired))
	// Output:
	// true
	// false
	// true
}

func ExampleNewUntilElapsed() {
	p := retry.NewUntilElapsed(10*time.Second, time.Second)
	fmt.Println(p.AllowRetry(7, 9*time.Second))
	fmt.Println(p.AllowRetry(8, 10*time.Second))
	// Output:
	// 1s true
	// 0s false
}
