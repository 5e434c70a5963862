package webhooks

import (
	"context"
	"errors"
	"testing"
	"time"
)

// TestFeatureCacheFollowsEpoch: answers are reused only within the lease of
// the last epoch read; the lease is renewed by reading the epoch, a moved
// epoch empties the cache, a zero window or a failed read caches nothing,
// and an answer looked up while the epoch moved is not kept.
func TestFeatureCacheFollowsEpoch(t *testing.T) {
	t.Parallel()
	auth := &fakeAuth{on: true, epoch: 7, now: time.Unix(1_800_000_000, 0), window: 500 * time.Millisecond}
	var epochErr error
	epochReads := 0
	c := newFeatureCache(auth.lookup, func(ctx context.Context) (int64, time.Duration, error) {
		epochReads++
		if epochErr != nil {
			return 0, 0, epochErr
		}
		return auth.readEpoch(ctx)
	})
	c.now = auth.clock
	ctx := context.Background()
	check := func(step string, want bool, lookups, reads int) {
		t.Helper()
		before, beforeReads := auth.lookupCount(), epochReads
		f, err := c.firing(ctx, "t1")
		on := f.On
		if err != nil || on != want || auth.lookupCount()-before != lookups || epochReads-beforeReads != reads {
			t.Errorf("%s: %v, %v after %d lookups and %d epoch reads; want %v after %d and %d", step, on, err,
				auth.lookupCount()-before, epochReads-beforeReads, want, lookups, reads)
		}
	}
	advance := func(d time.Duration) {
		auth.mu.Lock()
		auth.now = auth.now.Add(d)
		auth.mu.Unlock()
	}
	check("first", true, 1, 1)
	check("cached", true, 0, 0)
	advance(400 * time.Millisecond)
	check("still within the lease", true, 0, 0)
	advance(100 * time.Millisecond) // 95 % of the window has passed
	check("lease renewed, same epoch", true, 0, 1)

	auth.set(false) // moves the epoch; answered a window later
	check("epoch moved", false, 1, 1)
	check("cached off", false, 0, 0)

	// Caching turned off at the auth service (window 0): every check asks,
	// and the epoch is read again only after a pause.
	auth.mu.Lock()
	auth.window = 0
	auth.now = auth.now.Add(time.Second)
	auth.mu.Unlock()
	check("window 0", false, 1, 1)
	check("window 0 again", false, 1, 0)

	// The epoch cannot be read: every check asks the flag itself.
	auth.mu.Lock()
	auth.window = 500 * time.Millisecond
	auth.mu.Unlock()
	advance(idleEpochPoll)
	epochErr = errors.New("auth unreachable")
	check("epoch unknown", false, 1, 1)
	check("epoch unknown again", false, 1, 0)
	epochErr = nil
	advance(idleEpochPoll)
	check("epoch back", false, 1, 1)
	check("cached again", false, 0, 0)

	// A flag read while the cache saw the epoch move may predate the
	// change: it answers this once and is not kept.
	c.mu.Lock()
	c.entries = map[string]Firing{} // a miss, so the next check looks up
	c.mu.Unlock()
	auth.mu.Lock()
	auth.during = func() {
		// Meanwhile another tenant change is answered and another check
		// reads the moved epoch.
		auth.mu.Lock()
		auth.epoch++
		auth.now = auth.now.Add(auth.window)
		auth.mu.Unlock()
		c.renew(ctx)
	}
	auth.mu.Unlock()
	check("read across an epoch move", false, 1, 1)
	check("not kept", false, 1, 0)
	check("kept now", false, 0, 0)
}

// TestFeatureCacheWithoutEpoch: without an epoch to follow nothing is
// cached; every check asks.
func TestFeatureCacheWithoutEpoch(t *testing.T) {
	t.Parallel()
	auth := &fakeAuth{on: true}
	c := newFeatureCache(auth.lookup, nil)
	for range 3 {
		if f, err := c.firing(context.Background(), "t1"); !f.On || err != nil {
			t.Fatalf("%v %v", f, err)
		}
	}
	if n := auth.lookupCount(); n != 3 {
		t.Errorf("%d lookups, want 3", n)
	}
}
