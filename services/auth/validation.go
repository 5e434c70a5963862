package auth

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"errors"
	"slices"
	"time"

	authv1 "github.com/almoner/almoner/pkg/api/almoner/auth/v1"
	"github.com/almoner/almoner/pkg/apperr"
	"github.com/almoner/almoner/pkg/features"
	"github.com/almoner/almoner/services/auth/keyformat"
	"github.com/almoner/almoner/services/auth/store"
)

type validationServer struct {
	authv1.UnimplementedKeyValidationServiceServer
	s *Service
}

// dummyHash is compared against when no key row exists, so that an unknown
// lookup id costs the same work as a wrong secret.
var dummyHash = sha256.Sum256([]byte("almoner-no-such-key"))

// ValidateKey implements the spec's four conditions plus the deployment's
// environment. Every failure returns the same generic error.
func (v *validationServer) ValidateKey(ctx context.Context, req *authv1.ValidateKeyRequest) (*authv1.ValidateKeyResponse, error) {
	s := v.s
	key, err := keyformat.Parse(req.GetApiKey())
	if err != nil || key.Environment != s.cfg.Environment {
		return nil, apperr.Unauthenticated()
	}
	presented := key.Hash()
	now := s.now()
	cred, err := s.credential(ctx, key.LookupID, now)
	if errors.Is(err, store.ErrNotFound) {
		subtle.ConstantTimeCompare(dummyHash[:], presented)
		return nil, apperr.Unauthenticated()
	}
	if err != nil {
		return nil, err
	}
	ok := subtle.ConstantTimeCompare(cred.KeyHash, presented) == 1
	ok = ok && cred.KeyUsable && cred.TenantActive && cred.Environment == s.cfg.Environment
	ok = ok && slices.Contains(cred.TenantFeature, features.APIAccess)
	// No grace period: the key fails from the instant expiresAt is reached.
	ok = ok && (cred.ExpiresAt == nil || now.Before(*cred.ExpiresAt))
	if !ok {
		return nil, apperr.Unauthenticated()
	}
	s.usage.Touch(cred.TenantID, cred.KeyID, now)
	return &authv1.ValidateKeyResponse{
		TenantId:  cred.TenantID.String(),
		KeyId:     cred.KeyID.String(),
		KeyPrefix: cred.KeyPrefix,
		Scopes:    cred.Scopes,
		Features:  cred.TenantFeature,
	}, nil
}

// credential reads a key's credential, from the cache when it is on. Only
// existing keys are cached; the state checks run on every request, so a
// cached key still fails the instant it expires.
func (s *Service) credential(ctx context.Context, lookup string, now time.Time) (store.Credential, error) {
	if s.cache == nil {
		return s.store.CredentialByLookup(ctx, lookup)
	}
	if cred, ok := s.cache.get(lookup, now); ok {
		return cred, nil
	}
	epoch := s.cache.begin()
	cred, err := s.store.CredentialByLookup(ctx, lookup)
	if err == nil {
		s.cache.put(lookup, cred, epoch, now)
	}
	return cred, err
}

// awaitInvalidation runs change, which commits a NOTIFY with payload, and
// returns once this replica's listener has received that notification, so
// that the change is in force on every replica (each gets the same
// notification at commit) before the caller is answered.
func (s *Service) awaitInvalidation(ctx context.Context, payload string, change func() error) error {
	if s.cache == nil {
		return change()
	}
	seen := s.cache.expect(payload)
	if err := change(); err != nil {
		s.cache.cancel(payload, seen)
		return err
	}
	// This replica needs no wait: drop the entry now.
	s.cache.invalidate(payload, false)
	select {
	case <-seen:
	case <-time.After(2 * time.Second):
		s.logger.WarnContext(ctx, "auth cache: own invalidation not received in 2s", "payload", payload)
	case <-ctx.Done():
	}
	return nil
}
