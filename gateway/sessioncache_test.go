package gateway

import (
	"context"
	"io"
	"log/slog"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/timestamppb"

	authv1 "github.com/almoner/almoner/pkg/api/almoner/auth/v1"
)

// sessionValidator is fakeValidator answering ValidateSession too: "good"
// is a session ending at ends.
type sessionValidator struct {
	*fakeValidator
	mu    sync.Mutex
	calls int
	ends  time.Time
}

func (s *sessionValidator) ValidateSession(_ context.Context, req *authv1.ValidateSessionRequest, _ ...grpc.CallOption) (*authv1.ValidateSessionResponse, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.calls++
	if req.GetToken() != "good" {
		return nil, status.Error(codes.Unauthenticated, "no")
	}
	return &authv1.ValidateSessionResponse{UserId: "u1", SessionId: "s1", TenantId: req.GetTenantId(), ExpiresAt: timestamppb.New(s.ends)}, nil
}

// TestSessionCache: a session validation is answered from the cache under
// the lease, for at most sessionEntryLife, never past the session's end,
// never across an epoch move, per tenant, and a failure is never kept.
func TestSessionCache(t *testing.T) {
	clk := &clock{t: time.Date(2026, 11, 24, 12, 0, 0, 0, time.UTC)}
	f := &fakeValidator{epoch: 1, window: 500 * time.Millisecond}
	sv := &sessionValidator{fakeValidator: f, ends: clk.t.Add(24 * time.Hour)}
	c := newKeyCache(sv, slog.New(slog.NewTextHandler(io.Discard, nil)))
	c.now = clk.now
	ctx := context.Background()
	calls := func(token, tenant string, n int) int {
		t.Helper()
		before := sv.calls
		for range n {
			_, _ = c.ValidateSession(ctx, token, tenant)
		}
		return sv.calls - before
	}
	c.poll(ctx)
	if got := calls("good", "t1", 3); got != 1 {
		t.Errorf("three validations under one lease: %d calls, want 1", got)
	}
	if got := calls("good", "t2", 1); got != 1 {
		t.Errorf("another tenant was answered from the first one's entry")
	}
	if got := calls("bad", "t1", 2); got != 2 {
		t.Errorf("a failure was cached: %d calls for 2 validations", got)
	}
	clk.advance(sessionEntryLife + time.Second)
	c.poll(ctx)
	if got := calls("good", "t1", 2); got != 1 {
		t.Errorf("after sessionEntryLife: %d calls, want 1 (the entry ended, the new one answers)", got)
	}
	f.set(func(f *fakeValidator) { f.epoch = 2 })
	c.poll(ctx)
	if got := calls("good", "t1", 1); got != 1 {
		t.Errorf("the epoch moved and the cache answered")
	}
	sv.ends = clk.t.Add(10 * time.Second)
	clk.advance(2 * time.Second)
	c.poll(ctx)
	calls("good", "t3", 1)
	clk.advance(9 * time.Second)
	c.poll(ctx)
	if got := calls("good", "t3", 1); got != 1 {
		t.Errorf("an entry outlived its session's end")
	}
}
