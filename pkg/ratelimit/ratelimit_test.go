package ratelimit

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/almoner/almoner/pkg/db"
	"github.com/almoner/almoner/pkg/testdb"
)

func newLimiter(t *testing.T) (*Limiter, *pgxpool.Pool) {
	t.Helper()
	pool, err := db.Open(context.Background(), testdb.New(t, Migrations()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	return New(pool), pool
}

func TestFixedWindow(t *testing.T) {
	t.Parallel()
	l, _ := newLimiter(t)
	ctx := context.Background()
	start := time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC) // a window boundary
	for i := 1; i <= 7; i++ {
		ok, err := l.AllowAt(ctx, ContactForm, "198.51.100.7", start.Add(time.Duration(i)*time.Minute))
		if err != nil {
			t.Fatal(err)
		}
		if want := i <= 5; ok != want {
			t.Errorf("request %d: allowed %v, want %v", i, ok, want)
		}
	}
	// Another key has its own count; the next window starts afresh.
	if ok, _ := l.AllowAt(ctx, ContactForm, "198.51.100.8", start.Add(time.Minute)); !ok {
		t.Error("another key was limited")
	}
	if ok, _ := l.AllowAt(ctx, ContactForm, "198.51.100.7", start.Add(15*time.Minute)); !ok {
		t.Error("the next window was limited")
	}
	if ok, _ := l.AllowAt(ctx, ContactForm, "198.51.100.7", start.Add(15*time.Minute-time.Nanosecond)); ok {
		t.Error("the last instant of the first window was allowed")
	}
	// The database clock is used when no time is given.
	if ok, err := l.Allow(ctx, Policy{Name: "t", Limit: 1, Window: time.Hour}, "k"); !ok || err != nil {
		t.Errorf("Allow = %v, %v", ok, err)
	}
	if _, err := l.Allow(ctx, Policy{Name: "bad"}, "k"); err == nil {
		t.Error("a policy without limit or window was accepted")
	}
}

// TestSharedCounter: many callers (as many replicas would) hitting one key
// at once get exactly Limit admissions.
func TestSharedCounter(t *testing.T) {
	t.Parallel()
	l, pool := newLimiter(t)
	ctx := context.Background()
	other := New(pool) // a second limiter, as on another replica
	var allowed atomic.Int64
	var wg sync.WaitGroup
	at := time.Date(2026, 3, 1, 10, 5, 0, 0, time.UTC)
	for i := range 40 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			lim := l
			if i%2 == 1 {
				lim = other
			}
			ok, err := lim.AllowAt(ctx, ContactForm, "203.0.113.9", at)
			if err != nil {
				t.Error(err)
			}
			if ok {
				allowed.Add(1)
			}
		}()
	}
	wg.Wait()
	if allowed.Load() != 5 {
		t.Errorf("%d requests allowed, want 5", allowed.Load())
	}
}

func TestPrune(t *testing.T) {
	t.Parallel()
	l, pool := newLimiter(t)
	ctx := context.Background()
	old := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	if _, err := l.AllowAt(ctx, ContactForm, "a", old); err != nil {
		t.Fatal(err)
	}
	if _, err := l.AllowAt(ctx, ContactForm, "b", old.Add(24*time.Hour)); err != nil {
		t.Fatal(err)
	}
	n, err := l.Prune(ctx, old.Add(time.Hour))
	if err != nil || n != 1 {
		t.Fatalf("Prune = %d, %v", n, err)
	}
	var left int
	if err := pool.QueryRow(ctx, `SELECT count(*) FROM ratelimit.counters`).Scan(&left); err != nil || left != 1 {
		t.Errorf("%d rows left, %v", left, err)
	}
}
