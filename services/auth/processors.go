package auth

import (
	"context"
	"errors"
	"strings"

	"github.com/google/uuid"

	authv1 "github.com/almoner/almoner/pkg/api/almoner/auth/v1"
	"github.com/almoner/almoner/pkg/apperr"
	"github.com/almoner/almoner/pkg/authctx"
	"github.com/almoner/almoner/pkg/db"
	"github.com/almoner/almoner/pkg/secretbox"
	"github.com/almoner/almoner/services/auth/keyformat"
	"github.com/almoner/almoner/services/auth/store"
)

// The one processor Almoner speaks to, and its key modes.
const (
	providerStripe = "stripe"
	modeTest       = "test"
	modeLive       = "live"
)

// Stripe's key and webhook-secret prefixes. Publishable keys (pk_) are
// refused: they cannot charge.
const (
	webhookSecretPrefix = "whsec_"
	// minSecretTail is the fewest characters after a prefix: a key cut
	// short by a bad paste is refused here instead of at the first
	// charge, and the hint's last four are a small part of the key.
	minSecretTail = 12
	maxSecretLen  = 255
)

// keyPrefixes are the secret and restricted key prefixes a deployment of
// each environment accepts, and the mode they mean.
var keyPrefixes = map[string]struct {
	prefixes []string
	mode     string
}{
	keyformat.Sandbox:    {[]string{"sk_test_", "rk_test_"}, modeTest},
	keyformat.Production: {[]string{"sk_live_", "rk_live_"}, modeLive},
}

// The associated data of the two sealed columns: the tenant id and the
// field, so that a box opens only in its own row and column.
func secretKeyAD(tenantID uuid.UUID) []byte     { return []byte(tenantID.String() + "/secret_key") }
func webhookSecretAD(tenantID uuid.UUID) []byte { return []byte(tenantID.String() + "/webhook_secret") }

// processorInput is a validated SetTenantProcessorRequest.
type processorInput struct {
	provider, mode, secretKey, webhookSecret, hint string
}

// validateProcessor checks a request against this deployment's
// environment. No message repeats a key: they end up in logs and
// terminals.
func validateProcessor(req *authv1.SetTenantProcessorRequest, environment string) (processorInput, error) {
	var v apperr.Violations
	in := processorInput{
		provider:      strings.TrimSpace(req.GetProvider()),
		secretKey:     strings.TrimSpace(req.GetSecretKey()),
		webhookSecret: strings.TrimSpace(req.GetWebhookSecret()),
	}
	if in.provider != providerStripe {
		v.Add("Provider", "'Provider' must be 'stripe'.")
	}
	accepted := keyPrefixes[environment]
	var prefix string
	for _, p := range accepted.prefixes {
		if strings.HasPrefix(in.secretKey, p) {
			prefix = p
		}
	}
	want := strings.Join(accepted.prefixes, " or ")
	switch {
	case in.secretKey == "":
		v.Add("SecretKey", "'SecretKey' must not be empty.")
	case prefix == "" && otherModeKey(in.secretKey, environment):
		v.Add("SecretKey", "'SecretKey' is a key of the other mode: this %s deployment accepts only keys starting with %s.", environment, want)
	case prefix == "":
		v.Add("SecretKey", "'SecretKey' must be a secret or restricted key starting with %s (this deployment is %s).", want, environment)
	case !wellFormedSecret(in.secretKey, prefix):
		v.Add("SecretKey", "'SecretKey' must be the whole key: %s, then at least %d more characters without spaces.", prefix, minSecretTail)
	default:
		in.mode = accepted.mode
		in.hint = prefix + "…" + in.secretKey[len(in.secretKey)-4:]
	}
	switch {
	case in.webhookSecret == "":
		v.Add("WebhookSecret", "'WebhookSecret' must not be empty.")
	case !strings.HasPrefix(in.webhookSecret, webhookSecretPrefix):
		v.Add("WebhookSecret", "'WebhookSecret' must be the endpoint's signing secret, starting with whsec_.")
	case !wellFormedSecret(in.webhookSecret, webhookSecretPrefix):
		v.Add("WebhookSecret", "'WebhookSecret' must be the whole secret: whsec_, then at least %d more characters without spaces.", minSecretTail)
	}
	return in, v.Err()
}

// otherModeKey reports whether key belongs to the environment this
// deployment is not, so the message can say so plainly.
func otherModeKey(key, environment string) bool {
	for env, a := range keyPrefixes {
		if env == environment {
			continue
		}
		for _, p := range a.prefixes {
			if strings.HasPrefix(key, p) {
				return true
			}
		}
	}
	return false
}

// wellFormedSecret checks the part after prefix: long enough, printable
// ASCII without spaces, bounded.
func wellFormedSecret(s, prefix string) bool {
	tail := s[len(prefix):]
	if len(tail) < minSecretTail || len(s) > maxSecretLen {
		return false
	}
	for i := 0; i < len(tail); i++ {
		if tail[i] <= ' ' || tail[i] > '~' {
			return false
		}
	}
	return true
}

func toTenantProcessor(tenantID uuid.UUID, p *store.Processor) *authv1.TenantProcessor {
	out := &authv1.TenantProcessor{TenantId: tenantID.String()}
	if p != nil {
		out.Provider, out.Mode, out.Configured, out.KeyHint = p.Provider, p.Mode, true, p.KeyHint
	}
	return out
}

// SetTenantProcessor seals the keys and stores them; the answer waits until
// no cache can still hold the previous credentials.
func (a *adminServer) SetTenantProcessor(ctx context.Context, req *authv1.SetTenantProcessorRequest) (*authv1.SetTenantProcessorResponse, error) {
	id, err := uuid.Parse(req.GetTenantId())
	if err != nil {
		return nil, errTenantNotFound
	}
	in, err := validateProcessor(req, a.s.cfg.Environment)
	if err != nil {
		return nil, err
	}
	p, err := a.s.store.SetProcessor(ctx, store.Processor{
		TenantID: id, Provider: in.provider, Mode: in.mode, KeyHint: in.hint,
		SecretKeyBox:     a.s.cfg.Sealer.Seal([]byte(in.secretKey), secretKeyAD(id)),
		WebhookSecretBox: a.s.cfg.Sealer.Seal([]byte(in.webhookSecret), webhookSecretAD(id)),
	}, authctx.SystemActor)
	if errors.Is(err, db.ErrNotFound) {
		return nil, errTenantNotFound
	}
	if err != nil {
		return nil, err
	}
	a.s.awaitCaches(ctx)
	return &authv1.SetTenantProcessorResponse{Processor: toTenantProcessor(id, &p)}, nil
}

// GetTenantProcessor reads the configuration without its keys.
func (a *adminServer) GetTenantProcessor(ctx context.Context, req *authv1.GetTenantProcessorRequest) (*authv1.GetTenantProcessorResponse, error) {
	id, err := uuid.Parse(req.GetTenantId())
	if err != nil {
		return nil, errTenantNotFound
	}
	tp, err := a.s.store.TenantProcessorByID(ctx, id)
	if errors.Is(err, db.ErrNotFound) {
		return nil, errTenantNotFound
	}
	if err != nil {
		return nil, err
	}
	return &authv1.GetTenantProcessorResponse{Processor: toTenantProcessor(id, tp.Processor)}, nil
}

// ClearTenantProcessor forgets the tenant's processor keys.
func (a *adminServer) ClearTenantProcessor(ctx context.Context, req *authv1.ClearTenantProcessorRequest) (*authv1.ClearTenantProcessorResponse, error) {
	id, err := uuid.Parse(req.GetTenantId())
	if err != nil {
		return nil, errTenantNotFound
	}
	cleared, err := a.s.store.ClearProcessor(ctx, id, authctx.SystemActor)
	if errors.Is(err, db.ErrNotFound) {
		return nil, errTenantNotFound
	}
	if err != nil {
		return nil, err
	}
	if cleared {
		a.s.awaitCaches(ctx)
	}
	return &authv1.ClearTenantProcessorResponse{Processor: toTenantProcessor(id, nil)}, nil
}

// processorServer gives the orders service tenants' processor keys. The
// gateway never maps it; it is reachable on the internal gRPC port only.
type processorServer struct {
	authv1.UnimplementedProcessorCredentialServiceServer
	s *Service
}

// GetProcessorCredentials opens the tenant's keys for the orders service.
func (ps *processorServer) GetProcessorCredentials(ctx context.Context, req *authv1.GetProcessorCredentialsRequest) (*authv1.GetProcessorCredentialsResponse, error) {
	byID, bySlug := req.GetTenantId() != "", req.GetTenantSlug() != ""
	if byID == bySlug {
		return nil, apperr.Invalid(apperr.Violation{Field: "TenantId", Message: "Exactly one of 'TenantId' and 'TenantSlug' must be given."})
	}
	var (
		tp  store.TenantProcessor
		err error
	)
	if byID {
		id, perr := uuid.Parse(req.GetTenantId())
		if perr != nil {
			return nil, errTenantNotFound
		}
		tp, err = ps.s.store.TenantProcessorByID(ctx, id)
	} else {
		tp, err = ps.s.store.TenantProcessorBySlug(ctx, req.GetTenantSlug())
	}
	if errors.Is(err, db.ErrNotFound) {
		return nil, errTenantNotFound
	}
	if err != nil {
		return nil, err
	}
	resp := &authv1.GetProcessorCredentialsResponse{TenantId: tp.TenantID.String(), TenantActive: tp.TenantActive}
	p := tp.Processor
	if p == nil {
		return resp, nil
	}
	key, kerr := ps.s.cfg.Sealer.Open(p.SecretKeyBox, secretKeyAD(tp.TenantID))
	whsec, werr := ps.s.cfg.Sealer.Open(p.WebhookSecretBox, webhookSecretAD(tp.TenantID))
	if err := errors.Join(kerr, werr); err != nil {
		// Not a missing configuration: the keys exist, and this process
		// holds another sealing key. The operator must fix the key (or set
		// the processor again); the caller gets an internal error.
		ps.s.logger.Error("auth: a tenant's payment processor keys cannot be unsealed: "+secretbox.KeyVar+
			" is not the key that sealed them; set the original key, or set the tenant's processor again",
			"tenant_id", tp.TenantID.String())
		return nil, err
	}
	resp.Configured, resp.Provider, resp.Mode = true, p.Provider, p.Mode
	resp.SecretKey, resp.WebhookSecret = string(key), string(whsec)
	return resp, nil
}
