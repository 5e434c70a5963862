package ttlcache

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

func TestCache(t *testing.T) {
	calls := map[string]int{}
	fail := false
	c := New(time.Minute, func(_ context.Context, k string) (string, error) {
		calls[k]++
		if fail {
			return "", errors.New("down")
		}
		return "v-" + k, nil
	})
	now := time.Unix(1_700_000_000, 0)
	c.SetClock(func() time.Time { return now })
	ctx := context.Background()

	for range 3 {
		if v, err := c.Get(ctx, "a"); err != nil || v != "v-a" {
			t.Fatalf("a = %q, %v", v, err)
		}
	}
	if calls["a"] != 1 {
		t.Errorf("lookups of a = %d, want 1", calls["a"])
	}
	// Expired: asked again; an error is returned, not cached, not stale.
	now = now.Add(time.Minute)
	fail = true
	if _, err := c.Get(ctx, "a"); err == nil {
		t.Error("a failed lookup was hidden")
	}
	fail = false
	if v, err := c.Get(ctx, "a"); err != nil || v != "v-a" || calls["a"] != 3 {
		t.Errorf("a = %q, %v after %d lookups", v, err, calls["a"])
	}
}

// TestCacheStaysBounded: past the bound the oldest entries make room one
// by one; the recent ones are all still served from memory (the cache is
// not emptied when full).
func TestCacheStaysBounded(t *testing.T) {
	var calls atomic.Int64
	c := New(time.Hour, func(_ context.Context, k string) (int, error) { calls.Add(1); return len(k), nil })
	ctx := context.Background()
	const extra = 50
	for i := range maxEntries + extra {
		if _, err := c.Get(ctx, fmt.Sprint("tenant-", i)); err != nil {
			t.Fatal(err)
		}
	}
	if n := len(c.m); n != maxEntries {
		t.Errorf("%d entries, want the bound %d", n, maxEntries)
	}
	before := calls.Load()
	for i := extra; i < maxEntries+extra; i++ {
		if _, err := c.Get(ctx, fmt.Sprint("tenant-", i)); err != nil {
			t.Fatal(err)
		}
	}
	if n := calls.Load() - before; n != 0 {
		t.Errorf("%d of the %d most recent tenants were loaded again", n, maxEntries)
	}
	if _, err := c.Get(ctx, "tenant-0"); err != nil || calls.Load() != before+1 {
		t.Errorf("the oldest tenant was not the one evicted (%d loads)", calls.Load()-before)
	}
}

// TestConcurrentMissesLoadOnce: many requests for one tenant at start-up
// (or just after its entry expired) make one call to the loader.
func TestConcurrentMissesLoadOnce(t *testing.T) {
	var calls atomic.Int64
	release := make(chan struct{})
	c := New(time.Minute, func(_ context.Context, k string) (string, error) {
		calls.Add(1)
		<-release
		return "v-" + k, nil
	})
	now := time.Unix(1_700_000_000, 0)
	var clock sync.Mutex
	c.SetClock(func() time.Time { clock.Lock(); defer clock.Unlock(); return now })
	for round := range 2 {
		const n = 50
		var started, done sync.WaitGroup
		errs := make(chan error, n)
		for range n {
			started.Add(1)
			done.Add(1)
			go func() {
				defer done.Done()
				started.Done()
				if v, err := c.Get(context.Background(), "t1"); err != nil || v != "v-t1" {
					errs <- fmt.Errorf("got %q, %v", v, err)
				}
			}()
		}
		started.Wait()
		time.Sleep(20 * time.Millisecond) // let them all reach the miss
		close(release)
		done.Wait()
		close(errs)
		for err := range errs {
			t.Error(err)
		}
		if got := calls.Load(); got != int64(round+1) {
			t.Fatalf("round %d: %d loads in all, want %d", round, got, round+1)
		}
		// Expire the entry: the next crowd shares one load again.
		release = make(chan struct{})
		clock.Lock()
		now = now.Add(time.Minute)
		clock.Unlock()
	}
}

// TestLeaderCancelled: when the request whose load the others wait on goes
// away, they load again with their own context instead of failing with its
// cancellation.
func TestLeaderCancelled(t *testing.T) {
	var calls atomic.Int64
	entered := make(chan struct{}, 2)
	c := New(time.Minute, func(ctx context.Context, k string) (string, error) {
		if calls.Add(1) == 1 {
			entered <- struct{}{}
			<-ctx.Done() // the first load lasts until its caller gives up
			return "", ctx.Err()
		}
		return "v-" + k, nil
	})
	leaderCtx, cancel := context.WithCancel(context.Background())
	leaderErr := make(chan error, 1)
	go func() {
		_, err := c.Get(leaderCtx, "t1")
		leaderErr <- err
	}()
	<-entered
	got := make(chan string, 1)
	go func() {
		v, err := c.Get(context.Background(), "t1")
		if err != nil {
			v = "error: " + err.Error()
		}
		got <- v
	}()
	time.Sleep(20 * time.Millisecond) // the follower joins the leader's load
	cancel()
	if err := <-leaderErr; !errors.Is(err, context.Canceled) {
		t.Errorf("leader: %v, want its own cancellation", err)
	}
	if v := <-got; v != "v-t1" {
		t.Errorf("follower got %q, want v-t1", v)
	}
	if n := calls.Load(); n != 2 {
		t.Errorf("%d loads, want 2", n)
	}
}
