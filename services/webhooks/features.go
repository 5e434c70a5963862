package webhooks

import (
	"context"
	"sync"
	"time"

	"github.com/almoner/almoner/pkg/features"
)

const featureWebhooks = features.Webhooks

// EpochLookup reads the auth service's validation epoch and cache window
// (GetValidationEpoch): the epoch moves, in the same transaction, with
// every tenant change (active flag, features), and the auth service answers
// such a change only one window after it committed.
type EpochLookup func(ctx context.Context) (epoch int64, window time.Duration, err error)

// featureCache remembers each tenant's webhooks:enabled answer under the
// auth service's validation epoch, as the gateway's key cache does
// (gateway/keycache.go, docs/auth.md "Validation cache"), so that turning
// the flag off stops events at once instead of a TTL later.
//
// The rule: an answer is served from memory only while the last epoch read
// started less than a window ago (the lease) and the epoch has not moved
// since the answer was looked up. A read that started before a change
// committed holds a lease that ends before the change is answered; a read
// that started after it sees the new epoch and empties the cache. An answer
// looked up while the cache saw the epoch move may predate the change and
// is not kept. So once `tenant feature --set webhooks:enabled=false` has
// returned, every check answers "off".
//
// The dispatcher checks the flag after it has read an endpoint's events
// (enqueueChunk): the answer is then at least as new as those events, and
// an event committed after the flag was turned off is never queued.
type featureCache struct {
	lookup FeatureLookup
	epoch  EpochLookup
	now    func() time.Time

	mu      sync.Mutex
	current int64     // the epoch last read
	gen     uint64    // moves whenever the cache sees the epoch move
	lease   time.Time // entries may answer before this instant
	retry   time.Time // no epoch read before this instant (after a failure, or caching off)
	entries map[string]Firing
}

// maxCachedTenants bounds the cache; tenants with webhook endpoints number
// far fewer.
const maxCachedTenants = 100_000

// idleEpochPoll is how long the cache leaves the epoch alone after a read
// failed or said caching is off (window 0); meanwhile every check asks the
// auth service.
const idleEpochPoll = time.Second

// epochTimeout bounds one epoch read, so a stalled auth service holds up a
// tick only this long.
const epochTimeout = 5 * time.Second

func newFeatureCache(lookup FeatureLookup, epoch EpochLookup) *featureCache {
	return &featureCache{lookup: lookup, epoch: epoch, now: time.Now, entries: map[string]Firing{}}
}

// firing answers whether, and since when, the tenant's events fire. An
// error means "unknown": the dispatcher then neither delivers nor skips
// the tenant's events, and asks again on the next tick.
func (c *featureCache) firing(ctx context.Context, tenantID string) (Firing, error) {
	c.renew(ctx)
	now := c.now()
	c.mu.Lock()
	f, ok := c.entries[tenantID]
	ok = ok && now.Before(c.lease)
	gen, caching := c.gen, now.Before(c.lease)
	c.mu.Unlock()
	if ok {
		return f, nil
	}
	f, err := c.lookup(ctx, tenantID)
	if err != nil || !caching {
		return f, err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.gen != gen {
		// The epoch moved while the flag was read: it may have been read
		// before the change.
		return f, nil
	}
	if _, ok := c.entries[tenantID]; !ok && len(c.entries) >= maxCachedTenants {
		for k := range c.entries { // evict an arbitrary entry
			delete(c.entries, k)
			break
		}
	}
	c.entries[tenantID] = f
	return f, nil
}

// renew reads the epoch when the lease has run out: it renews the lease,
// and empties the cache when the epoch moved or caching is off.
func (c *featureCache) renew(ctx context.Context) {
	if c.epoch == nil {
		return // no epoch to follow: nothing is cached
	}
	start := c.now()
	c.mu.Lock()
	if start.Before(c.lease) || start.Before(c.retry) {
		c.mu.Unlock()
		return
	}
	c.mu.Unlock()
	ectx, cancel := context.WithTimeout(ctx, epochTimeout)
	epoch, window, err := c.epoch(ectx)
	cancel()
	c.mu.Lock()
	defer c.mu.Unlock()
	if err != nil {
		c.lease, c.retry = time.Time{}, c.now().Add(idleEpochPoll)
		return
	}
	if epoch != c.current || window <= 0 {
		c.current = epoch
		c.gen++
		clear(c.entries)
	}
	if window <= 0 {
		c.lease, c.retry = time.Time{}, c.now().Add(idleEpochPoll)
		return
	}
	// The lease runs from before the request was sent, less a margin for
	// the two clocks' rates.
	c.lease = start.Add(window - window/20)
}
