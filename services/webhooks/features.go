package webhooks

import (
	"context"
	"time"

	"github.com/almoner/almoner/pkg/features"
	"github.com/almoner/almoner/pkg/ttlcache"
)

const featureWebhooks = features.Webhooks

// featureCache remembers each tenant's webhooks:enabled answer for a TTL,
// so a tick with many endpoints asks the auth service once per tenant.
type featureCache struct {
	*ttlcache.Cache[bool]
}

func newFeatureCache(lookup FeatureLookup, ttl time.Duration) *featureCache {
	return &featureCache{ttlcache.New(ttl, lookup)}
}

// enabled reports whether the tenant has webhooks:enabled. An error means
// "unknown": the dispatcher then neither delivers nor skips the tenant's
// events, and asks again on the next tick.
func (c *featureCache) enabled(ctx context.Context, tenantID string) (bool, error) {
	return c.Get(ctx, tenantID)
}
