package gateway

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"log/slog"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"golang.org/x/sync/singleflight"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/timestamppb"

	authv1 "github.com/almoner/almoner/pkg/api/almoner/auth/v1"
	"github.com/almoner/almoner/pkg/telemetry"
)

// keyCache remembers successful key validations so that most requests skip
// the ValidateKey round trip, without ever serving a revoked key, a
// deactivated tenant or a removed feature after the change was answered.
//
// The rule (docs/auth.md, "Validation cache"): the auth service keeps a
// validation epoch that every such change moves in its own transaction, and
// answers the change only after waiting one cache window. The cache polls
// the epoch; it answers from its entries only while its last epoch read
// started less than a window ago (its lease), and drops every entry when
// the epoch moves. A poll that started before a change committed has a
// lease that ends before the change is answered; a poll that started after
// sees the new epoch. An entry is only kept if the epoch did not move while
// its validation was in flight, so a validation read before a change can
// never outlive it.
type keyCache struct {
	client     authv1.KeyValidationServiceClient
	logger     *slog.Logger
	now        func() time.Time
	maxEntries int

	mu      sync.RWMutex
	epoch   int64
	gen     uint64    // moves with every epoch change the cache sees
	lease   time.Time // entries may answer before this instant
	window  time.Duration
	entries map[[sha256.Size]byte]cachedKey
	// sessions are staff session validations (sessioncache.go), by
	// sessionKey, under the same lease and generation.
	sessions map[[sha256.Size]byte]cachedSession
	failing  bool // the last poll failed (logged once per outage)

	usesMu sync.Mutex
	uses   map[string]keyUse // by key id: the latest use served from the cache

	// flight shares one ValidateKey call among concurrent misses of a key
	// (at start-up, or when an epoch move empties the cache, a burst of
	// requests with one key would each call the auth service).
	flight singleflight.Group
}

type cachedKey struct {
	resp *authv1.ValidateKeyResponse
	// until ends the entry before the key expires (zero: never).
	until time.Time
}

// defaultMaxCachedKeys bounds the cache; a deployment has far fewer live
// keys, and only keys that validated successfully are ever stored.
const defaultMaxCachedKeys = 100_000

// idlePoll is how often the epoch is polled while caching is off or the
// auth service does not answer, to notice when it can be turned on.
const idlePoll = time.Second

var keyValidations = prometheus.NewCounterVec(prometheus.CounterOpts{
	Name: "almoner_gateway_key_validations_total",
	Help: "API key validations by the gateway: answered from its cache (cached) or by the auth service (validated).",
}, []string{"result"})

var (
	validationsCached    = keyValidations.WithLabelValues("cached")
	validationsValidated = keyValidations.WithLabelValues("validated")
)

func init() { telemetry.Register(keyValidations) }

func newKeyCache(client authv1.KeyValidationServiceClient, logger *slog.Logger) *keyCache {
	return &keyCache{
		client: client, logger: logger, now: time.Now, maxEntries: defaultMaxCachedKeys,
		entries: map[[sha256.Size]byte]cachedKey{}, uses: map[string]keyUse{},
		sessions: map[[sha256.Size]byte]cachedSession{},
	}
}

// Validate answers from the cache when it may, and otherwise calls
// ValidateKey and remembers a success.
func (c *keyCache) Validate(ctx context.Context, apiKey string) (*authv1.ValidateKeyResponse, error) {
	h := sha256.Sum256([]byte(apiKey))
	now := c.now()
	c.mu.RLock()
	e, ok := c.entries[h]
	ok = ok && now.Before(c.lease) && (e.until.IsZero() || now.Before(e.until))
	gen := c.gen
	c.mu.RUnlock()
	if ok {
		validationsCached.Inc()
		c.noteUse(e.resp, now)
		return e.resp, nil
	}
	return c.validateShared(ctx, apiKey, h, gen)
}

// validateShared calls ValidateKey once for all the concurrent misses of a
// key at one cache generation. The generation is part of the flight's key:
// a request that arrives after the cache saw the epoch move never joins a
// call that started before it, so it never gets an answer from before the
// change. A follower whose leader was cancelled validates on its own.
func (c *keyCache) validateShared(ctx context.Context, apiKey string, h [sha256.Size]byte, gen uint64) (*authv1.ValidateKeyResponse, error) {
	var key [sha256.Size + 8]byte
	copy(key[:], h[:])
	binary.BigEndian.PutUint64(key[sha256.Size:], gen)
	v, err, shared := c.flight.Do(string(key[:]), func() (any, error) {
		return c.validate(ctx, apiKey, h, gen)
	})
	if err != nil && shared && ctx.Err() == nil && (errors.Is(err, context.Canceled) || status.Code(err) == codes.Canceled) {
		return c.validate(ctx, apiKey, h, gen)
	}
	if err != nil {
		return nil, err
	}
	return v.(*authv1.ValidateKeyResponse), nil
}

// validate calls ValidateKey and remembers a success.
func (c *keyCache) validate(ctx context.Context, apiKey string, h [sha256.Size]byte, gen uint64) (*authv1.ValidateKeyResponse, error) {
	validationsValidated.Inc()
	resp, err := c.client.ValidateKey(ctx, &authv1.ValidateKeyRequest{ApiKey: apiKey})
	if err != nil {
		return nil, err
	}
	c.remember(h, gen, resp)
	return resp, nil
}

// remember stores a validation made while the cache was at generation gen.
func (c *keyCache) remember(h [sha256.Size]byte, gen uint64, resp *authv1.ValidateKeyResponse) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.gen != gen || c.window <= 0 {
		// The epoch moved while the validation was in flight: it may have
		// been read before the change.
		return
	}
	var until time.Time
	if resp.GetExpiresAt() != nil {
		// Stop a window early: the key's expiry is judged by the auth
		// service's clock, which may run ahead of ours.
		until = resp.GetExpiresAt().AsTime().Add(-c.window)
		if !c.now().Before(until) {
			return
		}
	}
	if _, ok := c.entries[h]; !ok && len(c.entries) >= c.maxEntries {
		for k := range c.entries { // evict an arbitrary entry
			delete(c.entries, k)
			break
		}
	}
	c.entries[h] = cachedKey{resp: resp, until: until}
}

// keyUse is the latest use of a key answered from the cache: its tenant
// and when. It becomes an authv1.KeyUse only when a poll reports it, so
// that a cached request records it without allocating.
type keyUse struct {
	tenant string
	at     time.Time
}

// noteUse keeps the latest use of a key answered from the cache, for the
// next poll to report (lastUsedAt).
func (c *keyCache) noteUse(resp *authv1.ValidateKeyResponse, at time.Time) {
	c.usesMu.Lock()
	c.uses[resp.GetKeyId()] = keyUse{tenant: resp.GetTenantId(), at: at}
	c.usesMu.Unlock()
}

// takeUses returns the uses noted since the last report and forgets them.
func (c *keyCache) takeUses() []*authv1.KeyUse {
	c.usesMu.Lock()
	defer c.usesMu.Unlock()
	if len(c.uses) == 0 {
		return nil
	}
	out := make([]*authv1.KeyUse, 0, len(c.uses))
	for id, u := range c.uses {
		out = append(out, &authv1.KeyUse{TenantId: u.tenant, KeyId: id, UsedAt: timestamppb.New(u.at)})
	}
	c.uses = make(map[string]keyUse, len(out))
	return out
}

// returnUses puts back uses a failed report did not deliver, unless a later
// use of the same key was noted meanwhile.
func (c *keyCache) returnUses(uses []*authv1.KeyUse) {
	c.usesMu.Lock()
	defer c.usesMu.Unlock()
	for _, u := range uses {
		at := u.GetUsedAt().AsTime()
		if cur, ok := c.uses[u.GetKeyId()]; !ok || cur.at.Before(at) {
			c.uses[u.GetKeyId()] = keyUse{tenant: u.GetTenantId(), at: at}
		}
	}
}

// poll reads the epoch (reporting key uses) and renews the lease. It
// returns how long to wait before the next poll.
func (c *keyCache) poll(ctx context.Context) time.Duration {
	c.mu.RLock()
	window := c.window
	c.mu.RUnlock()
	timeout := idlePoll
	if window > 0 {
		timeout = window
	}
	uses := c.takeUses()
	start := c.now()
	pctx, cancel := context.WithTimeout(ctx, timeout)
	resp, err := c.client.GetValidationEpoch(pctx, &authv1.GetValidationEpochRequest{KeyUses: uses})
	cancel()
	if err != nil {
		c.returnUses(uses)
		c.mu.Lock()
		first := !c.failing
		c.failing = true
		c.mu.Unlock()
		if first && ctx.Err() == nil && status.Code(err) != codes.Unimplemented {
			c.logger.Warn("gateway: key cache cannot read the validation epoch; validating every request until it can", "error", err.Error())
		}
		return idlePoll / 4
	}
	w := resp.GetCacheWindow().AsDuration()
	c.mu.Lock()
	defer c.mu.Unlock()
	c.failing = false
	if resp.GetEpoch() != c.epoch || w <= 0 {
		c.epoch = resp.GetEpoch()
		c.gen++
		clear(c.entries)
		clear(c.sessions)
	}
	c.window = w
	if w <= 0 {
		c.lease = time.Time{}
		return idlePoll
	}
	// The lease runs from before the request was sent, less a margin for
	// the two clocks' rates.
	c.lease = start.Add(w - w/20)
	return w / 4
}

// run polls until ctx ends.
func (c *keyCache) run(ctx context.Context) {
	for {
		wait := c.poll(ctx)
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			// Report the last uses so that lastUsedAt keeps them.
			if uses := c.takeUses(); len(uses) > 0 {
				fctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Second)
				_, _ = c.client.GetValidationEpoch(fctx, &authv1.GetValidationEpochRequest{KeyUses: uses})
				cancel()
			}
			return
		case <-t.C:
		}
	}
}
