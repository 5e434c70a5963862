package ttlcache

import (
	"context"
	"errors"
	"fmt"
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

func TestCacheStaysBounded(t *testing.T) {
	c := New(time.Hour, func(_ context.Context, k string) (int, error) { return len(k), nil })
	ctx := context.Background()
	for i := range maxEntries + 50 {
		if _, err := c.Get(ctx, fmt.Sprint("tenant-", i)); err != nil {
			t.Fatal(err)
		}
	}
	if n := len(c.m); n > maxEntries {
		t.Errorf("%d entries, bound %d", n, maxEntries)
	}
}
