package auth

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"errors"
	"slices"
	"time"

	"github.com/google/uuid"
	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/timestamppb"

	authv1 "github.com/almoner/almoner/pkg/api/almoner/auth/v1"
	"github.com/almoner/almoner/pkg/apperr"
	"github.com/almoner/almoner/pkg/db"
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
	if errors.Is(err, db.ErrNotFound) {
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
	resp := &authv1.ValidateKeyResponse{
		TenantId:  cred.TenantID.String(),
		KeyId:     cred.KeyID.String(),
		KeyPrefix: cred.KeyPrefix,
		Scopes:    cred.Scopes,
		Features:  cred.TenantFeature,
		// The services take money given without a currency in this one:
		// it travels with the principal instead of each asking for it.
		DefaultCurrency: cred.TenantCurrency,
	}
	if cred.ExpiresAt != nil {
		resp.ExpiresAt = timestamppb.New(*cred.ExpiresAt)
	}
	return resp, nil
}

// credential reads a key's credential: one primary-key lookup, uncached
// here. Gateways cache successful validations under the validation epoch
// (GetValidationEpoch); this is what they fall back on.
func (s *Service) credential(ctx context.Context, lookup string, _ time.Time) (store.Credential, error) {
	return s.store.CredentialByLookup(ctx, lookup)
}

// maxReportedUses bounds one GetValidationEpoch report, so a confused or
// hostile caller cannot make the service hold an unbounded batch.
const maxReportedUses = 100_000

// GetValidationEpoch records the key uses a gateway served from its cache
// and returns the epoch with the cache window. The epoch is read after the
// uses are noted; a caller's lease runs from before it sent the request, so
// it never outlives a change committed before the read.
func (v *validationServer) GetValidationEpoch(ctx context.Context, req *authv1.GetValidationEpochRequest) (*authv1.GetValidationEpochResponse, error) {
	s := v.s
	uses := req.GetKeyUses()
	if len(uses) > maxReportedUses {
		var v apperr.Violations
		v.Add("KeyUses", "At most %d key uses per report.", maxReportedUses)
		return nil, v.Err()
	}
	now := s.now()
	for _, u := range uses {
		tenant, terr := uuid.Parse(u.GetTenantId())
		key, kerr := uuid.Parse(u.GetKeyId())
		if terr != nil || kerr != nil || u.GetUsedAt() == nil {
			continue
		}
		at := u.GetUsedAt().AsTime()
		if at.After(now) {
			// A caller's clock ahead of ours must not date a use in the future.
			at = now
		}
		s.usage.Touch(tenant, key, at)
	}
	epoch, err := s.store.Epoch(ctx)
	if err != nil {
		return nil, err
	}
	return &authv1.GetValidationEpochResponse{Epoch: epoch, CacheWindow: durationpb.New(s.cfg.KeyCacheWindow)}, nil
}

// awaitCaches returns once every gateway lease taken before a change that
// has just committed has run out: the change is then seen by every replica's
// very next request. It is called after revocations and tenant changes.
func (s *Service) awaitCaches(ctx context.Context) {
	if s.cfg.KeyCacheWindow <= 0 {
		return
	}
	t := time.NewTimer(s.cfg.KeyCacheWindow)
	defer t.Stop()
	select {
	case <-t.C:
	case <-ctx.Done():
	}
}
