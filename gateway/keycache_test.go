package gateway

import (
	"bytes"
	"context"
	"errors"
	"io"
	"log/slog"
	"runtime"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/timestamppb"

	authv1 "github.com/almoner/almoner/pkg/api/almoner/auth/v1"
)

// fakeValidator is the auth service as the key cache sees it.
type fakeValidator struct {
	// The methods the key cache never calls (ValidateSession) are left nil.
	authv1.KeyValidationServiceClient
	mu        sync.Mutex
	epoch     int64
	window    time.Duration
	pollErr   error
	expiresAt *time.Time
	validates int
	reported  []*authv1.KeyUse
	// currency is the tenant's default currency the validation answers.
	currency string
	// during runs inside ValidateKey, as if the call were in flight.
	during func()
}

func (f *fakeValidator) ValidateKey(_ context.Context, req *authv1.ValidateKeyRequest, _ ...grpc.CallOption) (*authv1.ValidateKeyResponse, error) {
	f.mu.Lock()
	f.validates++
	during := f.during
	f.during = nil
	exp := f.expiresAt
	currency := f.currency
	f.mu.Unlock()
	if during != nil {
		during()
	}
	if req.GetApiKey() != "good" {
		return nil, status.Error(codes.Unauthenticated, "no")
	}
	r := &authv1.ValidateKeyResponse{TenantId: "t1", KeyId: "k1", KeyPrefix: "ak_test_x", Scopes: []string{"a"}, DefaultCurrency: currency}
	if exp != nil {
		r.ExpiresAt = timestamppb.New(*exp)
	}
	return r, nil
}

func (f *fakeValidator) GetValidationEpoch(_ context.Context, req *authv1.GetValidationEpochRequest, _ ...grpc.CallOption) (*authv1.GetValidationEpochResponse, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.pollErr != nil {
		return nil, f.pollErr
	}
	f.reported = append(f.reported, req.GetKeyUses()...)
	return &authv1.GetValidationEpochResponse{Epoch: f.epoch, CacheWindow: durationpb.New(f.window)}, nil
}

func (f *fakeValidator) calls() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.validates
}

func (f *fakeValidator) set(fn func(*fakeValidator)) {
	f.mu.Lock()
	fn(f)
	f.mu.Unlock()
}

type clock struct{ t time.Time }

func (c *clock) now() time.Time          { return c.t }
func (c *clock) advance(d time.Duration) { c.t = c.t.Add(d) }

func newTestCache(f *fakeValidator) (*keyCache, *clock) {
	clk := &clock{t: time.Date(2026, 11, 24, 12, 0, 0, 0, time.UTC)}
	c := newKeyCache(f, slog.New(slog.NewTextHandler(io.Discard, nil)))
	c.now = clk.now
	return c, clk
}

// validateTimes validates the good key n times and returns how many of those
// reached the auth service.
func validateTimes(t *testing.T, c *keyCache, f *fakeValidator, n int) int {
	t.Helper()
	before := f.calls()
	for range n {
		if _, err := c.Validate(context.Background(), "good"); err != nil {
			t.Fatal(err)
		}
	}
	return f.calls() - before
}

// TestKeyCacheRefreshesTheCurrency: the tenant's default currency is
// answered from the cache with the rest of the principal, and a tenant
// change (which moves the epoch) is followed by the new currency on the
// next request, not by the cached one.
func TestKeyCacheRefreshesTheCurrency(t *testing.T) {
	f := &fakeValidator{epoch: 1, window: 500 * time.Millisecond, currency: "USD"}
	c, _ := newTestCache(f)
	c.poll(context.Background())
	currency := func() string {
		t.Helper()
		r, err := c.Validate(context.Background(), "good")
		if err != nil {
			t.Fatal(err)
		}
		return r.GetDefaultCurrency()
	}
	if got := currency(); got != "USD" {
		t.Fatalf("first validation: %q", got)
	}
	// Changed at the auth service, the epoch not yet read: the lease
	// still holds, and the cache answers as it was.
	f.set(func(f *fakeValidator) { f.currency = "EUR" })
	if got := currency(); got != "USD" {
		t.Fatalf("within the lease: %q, want the cached USD", got)
	}
	f.set(func(f *fakeValidator) { f.epoch++ })
	c.poll(context.Background())
	if got := currency(); got != "EUR" {
		t.Errorf("after the epoch moved: %q, want EUR", got)
	}
	if n := f.calls(); n != 2 {
		t.Errorf("%d validations reached the auth service, want 2", n)
	}
}

func TestKeyCache(t *testing.T) {
	const w = 500 * time.Millisecond
	soon := time.Date(2026, 11, 24, 12, 0, 0, 300_000_000, time.UTC) // within a window of the clock
	later := time.Date(2026, 11, 24, 13, 0, 0, 0, time.UTC)
	cases := []struct {
		name string
		// setup runs before the first poll; step runs after the cache has
		// validated once (and so may hold the key).
		setup     func(*fakeValidator)
		step      func(*keyCache, *clock, *fakeValidator)
		wantCalls int // of 3 further validations, how many reach the service
	}{
		{name: "lease held: answered from the cache", wantCalls: 0},
		{name: "no poll ever succeeded: every request validates",
			setup: func(f *fakeValidator) { f.pollErr = status.Error(codes.Unavailable, "down") }, wantCalls: 3},
		{name: "auth service without the epoch RPC: no cache",
			setup: func(f *fakeValidator) { f.pollErr = status.Error(codes.Unimplemented, "old") }, wantCalls: 3},
		{name: "window zero: caching off",
			setup: func(f *fakeValidator) { f.window = 0 }, wantCalls: 3},
		{name: "lease ran out without a poll",
			step: func(c *keyCache, clk *clock, _ *fakeValidator) { clk.advance(w) }, wantCalls: 3},
		{name: "lease ran out because polls fail",
			step: func(c *keyCache, clk *clock, f *fakeValidator) {
				f.set(func(f *fakeValidator) { f.pollErr = errors.New("partition") })
				clk.advance(w / 2)
				c.poll(context.Background())
				clk.advance(w / 2)
			}, wantCalls: 3},
		{name: "poll renews the lease",
			step: func(c *keyCache, clk *clock, _ *fakeValidator) {
				clk.advance(w / 2)
				c.poll(context.Background())
				clk.advance(w / 2)
			}, wantCalls: 0},
		{name: "epoch moved: entries dropped",
			step: func(c *keyCache, _ *clock, f *fakeValidator) {
				f.set(func(f *fakeValidator) { f.epoch++ })
				c.poll(context.Background())
			}, wantCalls: 1},
		{name: "window turned to zero: entries dropped",
			step: func(c *keyCache, _ *clock, f *fakeValidator) {
				f.set(func(f *fakeValidator) { f.window = 0 })
				c.poll(context.Background())
			}, wantCalls: 3},
		{name: "key expiring within a window is never cached",
			setup: func(f *fakeValidator) { f.expiresAt = &soon }, wantCalls: 3},
		{name: "key expiring later is cached",
			setup: func(f *fakeValidator) { f.expiresAt = &later }, wantCalls: 0},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f := &fakeValidator{epoch: 7, window: w}
			if tc.setup != nil {
				tc.setup(f)
			}
			c, clk := newTestCache(f)
			c.poll(context.Background())
			if n := validateTimes(t, c, f, 1); n != 1 {
				t.Fatalf("first validation reached the service %d times", n)
			}
			if tc.step != nil {
				tc.step(c, clk, f)
			}
			if got := validateTimes(t, c, f, 3); got != tc.wantCalls {
				t.Errorf("3 validations reached the service %d times, want %d", got, tc.wantCalls)
			}
		})
	}
}

// TestKeyCacheValidationInFlightAcrossEpochChange: a validation that was in
// flight while the epoch moved may have read the key before the change, so
// it must not be kept.
func TestKeyCacheValidationInFlightAcrossEpochChange(t *testing.T) {
	f := &fakeValidator{epoch: 1, window: time.Second}
	c, _ := newTestCache(f)
	c.poll(context.Background())
	f.set(func(f *fakeValidator) {
		f.during = func() {
			f.set(func(f *fakeValidator) { f.epoch = 2 })
			c.poll(context.Background())
		}
	})
	if n := validateTimes(t, c, f, 1); n != 1 {
		t.Fatal(n)
	}
	if n := validateTimes(t, c, f, 1); n != 1 {
		t.Errorf("a validation from before the epoch moved was served from the cache")
	}
	if n := validateTimes(t, c, f, 1); n != 0 {
		t.Errorf("a validation after the move was not cached")
	}
}

func TestKeyCacheFailuresAreNotCached(t *testing.T) {
	f := &fakeValidator{epoch: 1, window: time.Second}
	c, _ := newTestCache(f)
	c.poll(context.Background())
	for range 3 {
		if _, err := c.Validate(context.Background(), "bad"); status.Code(err) != codes.Unauthenticated {
			t.Fatalf("err = %v", err)
		}
	}
	if f.calls() != 3 {
		t.Errorf("3 failed validations reached the service %d times", f.calls())
	}
}

func TestKeyCacheReportsUses(t *testing.T) {
	f := &fakeValidator{epoch: 1, window: time.Second}
	c, clk := newTestCache(f)
	c.poll(context.Background())
	validateTimes(t, c, f, 1) // validated by the service: the service noted it
	clk.advance(10 * time.Millisecond)
	validateTimes(t, c, f, 1) // from the cache: the gateway notes it
	usedAt := clk.t
	f.set(func(f *fakeValidator) { f.pollErr = errors.New("down") })
	c.poll(context.Background())
	f.set(func(f *fakeValidator) { f.pollErr = nil })
	if len(f.reported) != 0 {
		t.Fatalf("a failed poll reported %v", f.reported)
	}
	c.poll(context.Background())
	if len(f.reported) != 1 || f.reported[0].GetKeyId() != "k1" || f.reported[0].GetTenantId() != "t1" ||
		!f.reported[0].GetUsedAt().AsTime().Equal(usedAt) {
		t.Fatalf("reported %v, want k1 of t1 at %v (kept across the failed poll)", f.reported, usedAt)
	}
	c.poll(context.Background())
	if len(f.reported) != 1 {
		t.Errorf("a use was reported twice: %v", f.reported)
	}
}

func TestKeyCacheBounded(t *testing.T) {
	f := &fakeValidator{epoch: 1, window: time.Second}
	c, _ := newTestCache(f)
	c.maxEntries = 2
	c.poll(context.Background())
	for i := range 5 {
		c.remember([32]byte{byte(i)}, c.gen, &authv1.ValidateKeyResponse{KeyId: "k"})
	}
	if len(c.entries) != 2 {
		t.Errorf("%d entries, bound 2", len(c.entries))
	}
}

// TestKeyCacheSharesConcurrentMisses: concurrent requests with one key on
// an empty cache make one ValidateKey call between them (single-flight),
// and a request that arrives after the epoch moved does not join a call
// that started before the move.
func TestKeyCacheSharesConcurrentMisses(t *testing.T) {
	f := &fakeValidator{epoch: 1, window: time.Second}
	c, _ := newTestCache(f)
	c.poll(context.Background())
	const n = 50
	release := make(chan struct{})
	f.set(func(f *fakeValidator) { f.during = func() { <-release } })
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for range n {
		wg.Go(func() {
			_, err := c.Validate(context.Background(), "good")
			errs <- err
		})
	}
	waitFor(t, func() bool { return f.calls() == 1 })
	waitInFlight(t, n) // the other 49 wait for the leader's answer
	close(release)
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	if got := f.calls(); got != 1 {
		t.Errorf("%d concurrent misses made %d ValidateKey calls, want 1", n, got)
	}

	// A call in flight across an epoch move: a request after the move
	// validates on its own.
	c.mu.Lock()
	clear(c.entries)
	c.mu.Unlock()
	release = make(chan struct{})
	f.set(func(f *fakeValidator) { f.during = func() { <-release } })
	done := make(chan error, 1)
	go func() {
		_, err := c.Validate(context.Background(), "good")
		done <- err
	}()
	waitFor(t, func() bool { return f.calls() == 2 })
	f.set(func(f *fakeValidator) { f.epoch = 2 })
	c.poll(context.Background())
	if _, err := c.Validate(context.Background(), "good"); err != nil {
		t.Fatal(err)
	}
	if got := f.calls(); got != 3 {
		t.Errorf("a request after the epoch moved joined the call from before it (%d calls, want 3)", got)
	}
	close(release)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}

// TestKeyCacheFollowerOfCancelledLeader: when the request whose call the
// others share is cancelled, they validate on their own.
func TestKeyCacheFollowerOfCancelledLeader(t *testing.T) {
	f := &fakeValidator{epoch: 1, window: time.Second}
	c, _ := newTestCache(f)
	c.poll(context.Background())
	c.client = cancelAware{f}
	leaderCtx, cancel := context.WithCancel(context.Background())
	release := make(chan struct{})
	f.set(func(f *fakeValidator) { f.during = func() { <-release } })
	leader := make(chan error, 1)
	go func() {
		_, err := c.Validate(leaderCtx, "good")
		leader <- err
	}()
	waitFor(t, func() bool { return f.calls() == 1 })
	follower := make(chan error, 1)
	go func() {
		_, err := c.Validate(context.Background(), "good")
		follower <- err
	}()
	waitInFlight(t, 2) // the follower joins the flight
	cancel()
	close(release)
	if err := <-leader; status.Code(err) != codes.Canceled {
		t.Errorf("leader: %v, want canceled", err)
	}
	if err := <-follower; err != nil {
		t.Errorf("follower of a cancelled leader: %v, want its own validation", err)
	}
}

// cancelAware answers a cancelled context as a gRPC client does.
type cancelAware struct{ *fakeValidator }

func (c cancelAware) ValidateKey(ctx context.Context, req *authv1.ValidateKeyRequest, opts ...grpc.CallOption) (*authv1.ValidateKeyResponse, error) {
	resp, err := c.fakeValidator.ValidateKey(ctx, req, opts...)
	if ctx.Err() != nil {
		return nil, status.FromContextError(ctx.Err()).Err()
	}
	return resp, err
}

// waitInFlight waits until n goroutines are in the cache's single flight:
// the leader calling ValidateKey and the rest waiting for its answer. A
// fixed pause was not enough on a loaded machine: a goroutine that missed
// the cache but reached the flight only after the leader's call ended made
// a call of its own.
func waitInFlight(t *testing.T, n int) {
	t.Helper()
	waitFor(t, func() bool {
		buf := make([]byte, 1<<16)
		for {
			k := runtime.Stack(buf, true)
			if k < len(buf) {
				buf = buf[:k]
				break
			}
			buf = make([]byte, 2*len(buf))
		}
		return bytes.Count(buf, []byte("singleflight.(*Group).Do(")) >= n
	})
}

func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal("condition not met within 30 s")
		}
		time.Sleep(time.Millisecond)
	}
}
