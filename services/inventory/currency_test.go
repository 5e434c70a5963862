package inventory

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/almoner/almoner/pkg/apperr"
)

func TestCurrencyCache(t *testing.T) {
	t.Parallel()
	calls := map[string]int{}
	fail := false
	c := newCurrencyCache(func(_ context.Context, tenant string) (string, error) {
		calls[tenant]++
		if fail {
			return "", errors.New("connection refused")
		}
		return map[string]string{"a": "EUR", "b": "JPY"}[tenant], nil
	}, time.Minute)
	now := time.Unix(1_700_000_000, 0)
	c.SetClock(func() time.Time { return now })
	ctx := context.Background()

	for range 3 {
		if code, err := c.Get(ctx, "a"); err != nil || code != "EUR" {
			t.Fatalf("a = %q, %v", code, err)
		}
	}
	if code, _ := c.Get(ctx, "b"); code != "JPY" {
		t.Errorf("b = %q", code)
	}
	if calls["a"] != 1 || calls["b"] != 1 {
		t.Errorf("lookups = %v, want one per tenant", calls)
	}

	// After the TTL the value is read again; a failure then is a 503, not
	// a stale answer forever.
	now = now.Add(time.Minute)
	fail = true
	if _, err := c.Get(ctx, "a"); !apperr.IsKind(err, apperr.KindUnavailable) {
		t.Errorf("err = %v, want unavailable", err)
	}
	fail = false
	if code, err := c.Get(ctx, "a"); err != nil || code != "EUR" || calls["a"] != 3 {
		t.Errorf("a = %q, %v after %d lookups", code, err, calls["a"])
	}
}
