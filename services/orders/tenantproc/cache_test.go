package tenantproc

import (
	"context"
	"errors"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/protobuf/types/known/durationpb"

	authv1 "github.com/almoner/almoner/pkg/api/almoner/auth/v1"
	"github.com/almoner/almoner/services/orders/processor"
)

// fakeAuth is the auth service as the cache sees it: the processor
// settings of each tenant (version counts the changes) and the validation
// epoch with its window.
type fakeAuth struct {
	authv1.KeyValidationServiceClient

	mu       sync.Mutex
	version  map[string]int
	epoch    int64
	window   time.Duration
	epochErr error
	reads    atomic.Int64 // ForTenant calls
	polls    atomic.Int64 // GetValidationEpoch calls
	// during, when set, runs inside ForTenant after the settings were read.
	during func()
	// latency, when set, passes while the epoch is read.
	latency func()
}

// change is an operator's change of a tenant's settings: committed with
// the epoch moved.
func (f *fakeAuth) change(tenant string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.version[tenant]++
	f.epoch++
}

func (f *fakeAuth) ForTenant(_ context.Context, tenant string) (Account, bool, error) {
	f.reads.Add(1)
	f.mu.Lock()
	v := f.version[tenant]
	during := f.during
	f.mu.Unlock()
	if during != nil {
		during()
	}
	if v < 0 {
		return Account{}, false, errors.New("auth unavailable")
	}
	return Account{Processor: processor.Test{}, Name: ProviderStripe, Mode: strconv.Itoa(v)}, true, nil
}

func (f *fakeAuth) ForNotification(context.Context, string, string) (NotificationTarget, bool, error) {
	return NotificationTarget{}, false, nil
}

func (f *fakeAuth) GetValidationEpoch(context.Context, *authv1.GetValidationEpochRequest, ...grpc.CallOption) (*authv1.GetValidationEpochResponse, error) {
	f.polls.Add(1)
	if f.latency != nil {
		f.latency()
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.epochErr != nil {
		return nil, f.epochErr
	}
	return &authv1.GetValidationEpochResponse{Epoch: f.epoch, CacheWindow: durationpb.New(f.window)}, nil
}

// clock is a settable time.
type clock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *clock) Now() time.Time      { c.mu.Lock(); defer c.mu.Unlock(); return c.now }
func (c *clock) Add(d time.Duration) { c.mu.Lock(); c.now = c.now.Add(d); c.mu.Unlock() }

func newCached(t *testing.T, window time.Duration) (*Cached, *fakeAuth, *clock) {
	t.Helper()
	f := &fakeAuth{version: map[string]int{}, epoch: 7, window: window}
	clk := &clock{now: time.Date(2026, 12, 3, 12, 0, 0, 0, time.UTC)}
	c := NewCached(f, func() (authv1.KeyValidationServiceClient, error) { return f, nil })
	c.now = clk.Now
	return c, f, clk
}

// mode is the version of the settings an account was read at.
func mode(t *testing.T, c *Cached, tenant string) string {
	t.Helper()
	a, ok, err := c.ForTenant(context.Background(), tenant)
	if err != nil || !ok {
		t.Fatalf("ForTenant(%s) = %v, %v", tenant, ok, err)
	}
	return a.Mode
}

// TestCachedAnswersUnderTheLease: within a lease a tenant's account is
// read once; a new lease on the same epoch keeps it; a moved epoch drops
// it, so the change is used from the first payment after its answer
// (which the auth service gives one window after the commit).
func TestCachedAnswersUnderTheLease(t *testing.T) {
	c, f, clk := newCached(t, 500*time.Millisecond)
	for range 5 {
		if m := mode(t, c, "t1"); m != "0" {
			t.Fatalf("mode = %s, want 0", m)
		}
		clk.Add(50 * time.Millisecond)
	}
	if r, p := f.reads.Load(), f.polls.Load(); r != 1 || p != 1 {
		t.Errorf("5 payments in one lease: %d reads of the settings, %d of the epoch; want 1 and 1", r, p)
	}
	clk.Add(500 * time.Millisecond) // the lease ran out, the epoch did not move
	mode(t, c, "t1")
	if r, p := f.reads.Load(), f.polls.Load(); r != 1 || p != 2 {
		t.Errorf("a new lease on the same epoch: %d reads, %d polls; want 1 and 2", r, p)
	}
	// The operator's change commits; its answer waits one window.
	f.change("t1")
	clk.Add(500 * time.Millisecond)
	if m := mode(t, c, "t1"); m != "1" {
		t.Errorf("the first payment after the change was answered used settings %s, want 1", m)
	}
	if r := f.reads.Load(); r != 2 {
		t.Errorf("%d reads of the settings, want 2", r)
	}
}

// TestCachedKeepsNothingReadAcrossAMove: an account read while another
// caller's read of the epoch found it moved is not kept: it may be from
// before the change.
func TestCachedKeepsNothingReadAcrossAMove(t *testing.T) {
	c, f, clk := newCached(t, 500*time.Millisecond)
	mode(t, c, "t2") // the lease is taken
	var fired atomic.Bool
	f.mu.Lock()
	f.during = func() {
		if fired.Swap(true) {
			return
		}
		// While t1's settings are in flight: the change commits, the
		// lease runs out and t2's payment reads the moved epoch.
		f.change("t1")
		clk.Add(600 * time.Millisecond)
		mode(t, c, "t2")
	}
	f.mu.Unlock()
	if m := mode(t, c, "t1"); m != "0" { // read before the change: answered once, as auth did
		t.Fatalf("mode = %s", m)
	}
	f.mu.Lock()
	f.during = nil
	f.mu.Unlock()
	if m := mode(t, c, "t1"); m != "1" {
		t.Errorf("the next payment used settings %s, want 1: an account read across the move was kept", m)
	}
}

// TestCachedLeaseFromTheRequest: the lease runs from before the epoch was
// asked for, not from its answer: a slow answer shortens it.
func TestCachedLeaseFromTheRequest(t *testing.T) {
	c, f, clk := newCached(t, 500*time.Millisecond)
	f.latency = func() { clk.Add(300 * time.Millisecond) }
	mode(t, c, "t1")
	clk.Add(250 * time.Millisecond) // 550 ms after the request, 250 after the answer
	mode(t, c, "t1")
	if p := f.polls.Load(); p != 2 {
		t.Errorf("%d reads of the epoch, want 2: the lease outlived its window", p)
	}
}

// TestCachedOff: with a zero window, or while the epoch cannot be read,
// every payment reads its settings, and the epoch is tried again after
// offRetry, not on every payment.
func TestCachedOff(t *testing.T) {
	for _, tc := range []struct {
		name   string
		window time.Duration
		err    error
	}{
		{"zero window", 0, nil},
		{"epoch unreadable", 500 * time.Millisecond, errors.New("auth unavailable")},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, f, clk := newCached(t, tc.window)
			f.epochErr = tc.err
			for range 4 {
				mode(t, c, "t1")
				clk.Add(100 * time.Millisecond)
			}
			if r, p := f.reads.Load(), f.polls.Load(); r != 4 || p != 1 {
				t.Errorf("%d reads, %d polls; want 4 and 1", r, p)
			}
			f.mu.Lock()
			f.window, f.epochErr = 500*time.Millisecond, nil
			f.mu.Unlock()
			clk.Add(offRetry)
			mode(t, c, "t1")
			mode(t, c, "t1")
			if r, p := f.reads.Load(), f.polls.Load(); r != 5 || p != 2 {
				t.Errorf("caching back on: %d reads, %d polls; want 5 and 2", r, p)
			}
		})
	}
}

// TestCachedErrorsNotKept: a failed read is answered as it is and read
// again on the next payment.
func TestCachedErrorsNotKept(t *testing.T) {
	c, f, _ := newCached(t, 500*time.Millisecond)
	f.version["t1"] = -1
	for range 2 {
		if _, _, err := c.ForTenant(context.Background(), "t1"); err == nil {
			t.Fatal("no error")
		}
	}
	if r := f.reads.Load(); r != 2 {
		t.Errorf("%d reads, want 2", r)
	}
}

// TestCachedConcurrent: many payments at once under moving epochs (run
// with -race); each answer is a version at least as new as the last
// change answered before the payment began.
func TestCachedConcurrent(t *testing.T) {
	c, f, _ := newCached(t, 5*time.Millisecond)
	c.now = time.Now
	var answered atomic.Int64 // the last version whose change was answered
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		for v := int64(1); ; v++ {
			select {
			case <-stop:
				return
			default:
			}
			f.change("t1")
			time.Sleep(5 * time.Millisecond) // the answer waits one window
			answered.Store(v)
		}
	})
	for range 8 {
		wg.Go(func() {
			for range 300 {
				min := answered.Load()
				a, _, err := c.ForTenant(context.Background(), "t1")
				if err != nil {
					t.Error(err)
					return
				}
				if got, _ := strconv.ParseInt(a.Mode, 10, 64); got < min {
					t.Errorf("payment after change %d was answered used settings of version %d", min, got)
					return
				}
			}
		})
	}
	time.Sleep(200 * time.Millisecond)
	close(stop)
	wg.Wait()
}
