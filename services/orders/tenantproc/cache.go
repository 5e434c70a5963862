package tenantproc

import (
	"context"
	"sync"
	"time"

	authv1 "github.com/almoner/almoner/pkg/api/almoner/auth/v1"
)

// Cached keeps each tenant's processor account, its Stripe client built
// once, instead of reading it from the auth service (a gRPC call, its SQL,
// two AES-GCM opens) and building a client for every payment. It follows
// the rule of the gateway's key cache (docs/auth.md, "Validation cache"),
// on the same validation epoch, which the auth service moves in the
// transaction of every processor change (SetTenantProcessor,
// ClearTenantProcessor) and then waits one cache window before it answers
// the change:
//
//   - an entry answers only while the cache's lease holds: less than the
//     window (less 5 %, for the clocks' rates) after the start of its last
//     read of the epoch;
//   - a read that finds the epoch moved drops every entry;
//   - an account read from auth is kept only if no such drop happened
//     while it was read.
//
// So an account read before a change committed is never used once the
// change is answered: a lease taken before the commit ends before the
// answer, and a read of the epoch started after the commit sees it moved.
// A payment made after an operator's change was answered uses the new
// settings, as when every payment read them. The epoch is read on demand
// (at most once per window, by one caller at a time), not by a goroutine
// of its own. When the window is zero (gateway caching turned off) or the
// epoch cannot be read, every payment reads auth as before, and the epoch
// is tried again a second later.
type Cached struct {
	src    Source
	epochs func() (authv1.KeyValidationServiceClient, error)
	now    func() time.Time

	// renewMu lets one caller at a time read the epoch; the others wait
	// for its lease.
	renewMu sync.Mutex

	mu      sync.RWMutex
	epoch   int64
	read    bool      // an epoch was read
	gen     uint64    // moves whenever the entries are dropped
	lease   time.Time // entries answer before this instant
	off     time.Time // caching is off until this instant
	entries map[string]cachedAccount
}

type cachedAccount struct {
	account Account
	ok      bool
}

// maxCachedTenants bounds the entries; past it they are all dropped (each
// is only read again).
const maxCachedTenants = 10_000

// offRetry is how long caching stays off after a zero window or a failed
// read of the epoch.
const offRetry = time.Second

// epochTimeout bounds one read of the epoch.
const epochTimeout = 5 * time.Second

// NewCached returns src's accounts cached under the validation epoch that
// epochs reads (the auth service's KeyValidationService).
func NewCached(src Source, epochs func() (authv1.KeyValidationServiceClient, error)) *Cached {
	return &Cached{src: src, epochs: epochs, now: time.Now, entries: map[string]cachedAccount{}}
}

// ForTenant answers the tenant's account from the cache while its lease
// holds, and otherwise reads it from src (and keeps it when it may).
func (c *Cached) ForTenant(ctx context.Context, tenantID string) (Account, bool, error) {
	now := c.now()
	c.mu.RLock()
	e, hit := c.entries[tenantID]
	leased, off, gen := now.Before(c.lease), now.Before(c.off), c.gen
	c.mu.RUnlock()
	switch {
	case hit && leased:
		return e.account, e.ok, nil
	case off:
		return c.src.ForTenant(ctx, tenantID)
	case !leased:
		if gen, leased = c.renew(); !leased {
			return c.src.ForTenant(ctx, tenantID)
		}
		c.mu.RLock()
		e, hit = c.entries[tenantID]
		hit = hit && c.gen == gen && c.now().Before(c.lease)
		c.mu.RUnlock()
		if hit {
			return e.account, e.ok, nil
		}
	}
	a, ok, err := c.src.ForTenant(ctx, tenantID)
	if err != nil {
		return a, ok, err
	}
	c.mu.Lock()
	// Kept only when no read of the epoch dropped the entries meanwhile:
	// this account may have been read before the change that moved it.
	if c.gen == gen {
		if len(c.entries) >= maxCachedTenants {
			clear(c.entries)
		}
		c.entries[tenantID] = cachedAccount{account: a, ok: ok}
	}
	c.mu.Unlock()
	return a, ok, nil
}

// renew reads the epoch unless another caller renewed the lease while
// this one waited, and returns the generation and whether the lease holds.
func (c *Cached) renew() (uint64, bool) {
	c.renewMu.Lock()
	defer c.renewMu.Unlock()
	start := c.now()
	c.mu.RLock()
	gen, leased, off := c.gen, start.Before(c.lease), start.Before(c.off)
	c.mu.RUnlock()
	if leased || off {
		return gen, leased
	}
	// Not the caller's context: its principal and deadline are the
	// order's, and the lease serves every tenant.
	ctx, cancel := context.WithTimeout(context.Background(), epochTimeout)
	defer cancel()
	var resp *authv1.GetValidationEpochResponse
	client, err := c.epochs()
	if err == nil {
		resp, err = client.GetValidationEpoch(ctx, &authv1.GetValidationEpochRequest{})
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	window := resp.GetCacheWindow().AsDuration()
	if err != nil || window <= 0 {
		// Nothing cached may answer until an epoch is read again.
		clear(c.entries)
		c.gen++
		c.read, c.lease, c.off = false, time.Time{}, start.Add(offRetry)
		return c.gen, false
	}
	if !c.read || resp.GetEpoch() != c.epoch {
		clear(c.entries)
		c.gen++
		c.epoch, c.read = resp.GetEpoch(), true
	}
	// The lease runs from before the request, less a margin for the two
	// clocks' rates (as the gateway's): it never outlives a change
	// committed before the epoch was read.
	c.lease = start.Add(window - window/20)
	return c.gen, c.now().Before(c.lease)
}

// ForNotification is src's: a notification's lookup is not cached.
func (c *Cached) ForNotification(ctx context.Context, provider, slug string) (NotificationTarget, bool, error) {
	return c.src.ForNotification(ctx, provider, slug)
}
