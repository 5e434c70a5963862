package impersonation

import (
	"testing"
	"time"

	"github.com/almoner/almoner/services/auth/store"
)

func TestEndReason(t *testing.T) {
	now := time.Date(2026, 12, 2, 12, 0, 0, 0, time.UTC)
	holds := store.ImpersonationAccess{Impersonation: store.Impersonation{ExpiresAt: now.Add(time.Minute)}, GrantUntil: now.Add(time.Hour),
		OperatorActive: true, Member: true}
	for _, tc := range []struct {
		name   string
		change func(*store.ImpersonationAccess)
		want   string
	}{
		{"holds", func(*store.ImpersonationAccess) {}, ""},
		{"expired at the instant", func(a *store.ImpersonationAccess) { a.Impersonation.ExpiresAt = now }, store.EndExpired},
		{"grant withdrawn", func(a *store.ImpersonationAccess) { a.GrantUntil = time.Time{} }, store.EndGrantWithdrawn},
		{"grant ran out", func(a *store.ImpersonationAccess) { a.GrantUntil = now.Add(-time.Second) }, store.EndGrantWithdrawn},
		{"operator removed", func(a *store.ImpersonationAccess) { a.OperatorActive = false }, store.EndOperatorRemoved},
		{"user deactivated", func(a *store.ImpersonationAccess) { a.Member = false }, store.EndUserDeactivated},
	} {
		a := holds
		tc.change(&a)
		if got := EndReason(a, now); got != tc.want {
			t.Errorf("%s: %q, want %q", tc.name, got, tc.want)
		}
	}
	if got := Until(holds, now.Add(time.Hour*24)); !got.Equal(now.Add(time.Minute)) {
		t.Errorf("until %v", got)
	}
}

func TestChecks(t *testing.T) {
	now := time.Now()
	p := func(v int32) *int32 { return &v }
	for _, tc := range []struct {
		reason  string
		minutes *int32
		want    int32
		ok      bool
	}{
		{"ten chars!", nil, 30, true},
		{"too short", nil, 30, false},
		{"a valid reason", p(0), 0, false},
		{"a valid reason", p(61), 0, false},
		{"a valid reason", p(1), 1, true},
		{"a valid reason", p(60), 60, true},
	} {
		m, err := checkStart(tc.reason, tc.minutes)
		if (err == nil) != tc.ok || tc.ok && m != tc.want {
			t.Errorf("%q %v: %d %v", tc.reason, tc.minutes, m, err)
		}
	}
	for _, tc := range []struct {
		until time.Time
		ok    bool
	}{
		{time.Time{}, false}, {now, false}, {now.Add(time.Hour), true}, {now.Add(MaxGrant), true}, {now.Add(MaxGrant + time.Second), false},
	} {
		if err := checkGrant(tc.until, now); (err == nil) != tc.ok {
			t.Errorf("until %v: %v", tc.until, err)
		}
	}
}
