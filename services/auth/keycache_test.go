package auth

import (
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/almoner/almoner/services/auth/store"
)

func TestKeyCache(t *testing.T) {
	now := time.Now()
	tenant := uuid.New()
	cred := store.Credential{TenantID: tenant, KeyPrefix: "p"}
	c := newKeyCache(time.Minute)

	// Off until the listener says it is listening.
	c.put("a", cred, c.begin(), now)
	if _, ok := c.get("a", now); ok {
		t.Fatal("a disabled cache stored an entry")
	}
	c.setEnabled(true)
	c.put("a", cred, c.begin(), now)
	if _, ok := c.get("a", now); !ok {
		t.Fatal("miss after put")
	}
	if _, ok := c.get("a", now.Add(2*time.Minute)); ok {
		t.Error("entry older than maxAge served")
	}

	// A read that raced with an invalidation is not stored.
	epoch := c.begin()
	c.invalidate("key:b", true)
	c.put("b", cred, epoch, now)
	if _, ok := c.get("b", now); ok {
		t.Error("stale read stored after an invalidation")
	}

	// Key and tenant invalidations drop the right entries.
	c.put("b", cred, c.begin(), now)
	c.put("c", store.Credential{TenantID: uuid.New()}, c.begin(), now)
	c.invalidate("key:a", true)
	if _, ok := c.get("a", now); ok {
		t.Error("key invalidation kept the entry")
	}
	c.invalidate("tenant:"+tenant.String(), true)
	if _, ok := c.get("b", now); ok {
		t.Error("tenant invalidation kept the tenant's entry")
	}
	if _, ok := c.get("c", now); !ok {
		t.Error("tenant invalidation dropped another tenant's entry")
	}

	// Waiters wake on the listener's notification only.
	w := c.expect("key:z")
	c.invalidate("key:z", false)
	select {
	case <-w:
		t.Fatal("a local invalidation woke the waiter")
	default:
	}
	c.invalidate("key:z", true)
	select {
	case <-w:
	default:
		t.Fatal("the notification did not wake the waiter")
	}

	// Losing the listener empties the cache and releases waiters.
	w = c.expect("key:y")
	c.setEnabled(false)
	if _, ok := c.get("c", now); ok {
		t.Error("entries survive the listener")
	}
	select {
	case <-w:
	default:
		t.Fatal("waiter not released when the listener went away")
	}
}
