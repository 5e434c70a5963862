package webhooks

import (
	"context"
	"sync"
	"time"

	"github.com/almoner/almoner/pkg/features"
)

const featureWebhooks = features.Webhooks

// featureCache remembers each tenant's webhooks:enabled answer for a TTL,
// so a tick with many endpoints asks the auth service once per tenant.
type featureCache struct {
	lookup FeatureLookup
	ttl    time.Duration
	mu     sync.Mutex
	m      map[string]featureEntry
}

type featureEntry struct {
	on      bool
	expires time.Time
}

func newFeatureCache(lookup FeatureLookup, ttl time.Duration) *featureCache {
	return &featureCache{lookup: lookup, ttl: ttl, m: map[string]featureEntry{}}
}

// enabled reports whether the tenant has webhooks:enabled. An error means
// "unknown": the dispatcher then neither delivers nor skips the tenant's
// events, and asks again on the next tick.
func (c *featureCache) enabled(ctx context.Context, tenantID string) (bool, error) {
	now := time.Now()
	c.mu.Lock()
	e, ok := c.m[tenantID]
	c.mu.Unlock()
	if ok && now.Before(e.expires) {
		return e.on, nil
	}
	on, err := c.lookup(ctx, tenantID)
	if err != nil {
		return false, err
	}
	c.mu.Lock()
	c.m[tenantID] = featureEntry{on: on, expires: now.Add(c.ttl)}
	c.mu.Unlock()
	return on, nil
}
