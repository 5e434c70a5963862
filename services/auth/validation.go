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

// credential reads a key's credential. There is deliberately no cache: one
// primary-key lookup per request is what makes revocation, expiry and tenant
// changes take effect on the very next request on every replica
// (docs/auth.md explains what a correct cache would need).
func (s *Service) credential(ctx context.Context, lookup string, _ time.Time) (store.Credential, error) {
	return s.store.CredentialByLookup(ctx, lookup)
}
