package orders

import (
	"context"
	"net/http"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	authv1 "github.com/almoner/almoner/pkg/api/almoner/auth/v1"
	"github.com/almoner/almoner/pkg/apperr"
	"github.com/almoner/almoner/services/orders/processor"
	"github.com/almoner/almoner/services/orders/processor/stripeproc"
)

// Processor names, as stored with each payment.
const (
	providerTest   = "test"
	providerStripe = "stripe"
)

// tenantProcessor is the processor one tenant's payments go through.
type tenantProcessor struct {
	processor.Processor
	// Name is providerTest or providerStripe.
	Name string
	// Mode is "test" or "live": saved customers and methods belong to one.
	Mode string
}

// notificationTarget is what a processor notification is checked and
// applied with.
type notificationTarget struct {
	TenantID      string
	WebhookSecret string
}

// ProcessorSource finds the processor of a tenant.
type ProcessorSource interface {
	// ForTenant returns the tenant's processor; ok is false when the
	// tenant has none (a production tenant that has not connected Stripe).
	ForTenant(ctx context.Context, tenantID string) (p tenantProcessor, ok bool, err error)
	// ForNotification returns the tenant and webhook secret behind a
	// notification URL's slug; ok is false for an unknown slug or a tenant
	// without that provider.
	ForNotification(ctx context.Context, provider, slug string) (t notificationTarget, ok bool, err error)
}

// authProcessors reads each tenant's processor from the auth service (it
// owns tenant administration and keeps the keys sealed) on every use, so
// an operator's change applies to the very next payment. The lookup is
// one internal call beside a processor round trip that takes hundreds of
// milliseconds, so it is not cached.
type authProcessors struct {
	conn func() (grpc.ClientConnInterface, error)
	// APIBase is ALMONER_STRIPE_API_BASE.
	APIBase string
	// Sandbox keeps the test processor for tenants without Stripe.
	Sandbox bool
	// HTTP is shared by every tenant's Stripe adapter.
	HTTP *http.Client
}

func (a authProcessors) credentials(ctx context.Context, req *authv1.GetProcessorCredentialsRequest) (*authv1.GetProcessorCredentialsResponse, error) {
	conn, err := a.conn()
	if err != nil {
		return nil, apperr.Unavailable("The payment processor settings cannot be read right now.", err)
	}
	resp, err := authv1.NewProcessorCredentialServiceClient(conn).GetProcessorCredentials(ctx, req)
	if err != nil {
		if status.Code(err) == codes.NotFound {
			return nil, err
		}
		return nil, apperr.Unavailable("The payment processor settings cannot be read right now.", err)
	}
	return resp, nil
}

func (a authProcessors) ForTenant(ctx context.Context, tenantID string) (tenantProcessor, bool, error) {
	resp, err := a.credentials(ctx, &authv1.GetProcessorCredentialsRequest{TenantId: tenantID})
	if err != nil {
		return tenantProcessor{}, false, err
	}
	if resp.GetConfigured() && resp.GetProvider() == providerStripe {
		p := stripeproc.New(stripeproc.Config{APIBase: a.APIBase, SecretKey: resp.GetSecretKey(), HTTPClient: a.HTTP})
		return tenantProcessor{Processor: p, Name: providerStripe, Mode: resp.GetMode()}, true, nil
	}
	if a.Sandbox {
		return tenantProcessor{Processor: processor.Test{}, Name: providerTest, Mode: "test"}, true, nil
	}
	return tenantProcessor{}, false, nil
}

func (a authProcessors) ForNotification(ctx context.Context, provider, slug string) (notificationTarget, bool, error) {
	resp, err := a.credentials(ctx, &authv1.GetProcessorCredentialsRequest{TenantSlug: slug})
	if status.Code(err) == codes.NotFound {
		return notificationTarget{}, false, nil
	}
	if err != nil {
		return notificationTarget{}, false, err
	}
	if !resp.GetConfigured() || resp.GetProvider() != provider || resp.GetWebhookSecret() == "" || !resp.GetTenantActive() {
		return notificationTarget{}, false, nil
	}
	return notificationTarget{TenantID: resp.GetTenantId(), WebhookSecret: resp.GetWebhookSecret()}, true, nil
}

// staticProcessors gives every tenant one processor: tests of this module
// that do not need auth.
type staticProcessors struct {
	p tenantProcessor
}

func (s staticProcessors) ForTenant(context.Context, string) (tenantProcessor, bool, error) {
	return s.p, s.p.Processor != nil, nil
}

func (staticProcessors) ForNotification(context.Context, string, string) (notificationTarget, bool, error) {
	return notificationTarget{}, false, nil
}

// byName returns the processor that collected a payment: the tenant's
// current one when it is the same provider. A payment of the test
// processor is always the test processor's, whatever the tenant uses now.
func (s *Service) byName(ctx context.Context, tenantID, name string) (processor.Processor, error) {
	if name == providerTest {
		return guardedProcessor{processor.Test{}}, nil
	}
	tp, ok, err := s.processors().ForTenant(ctx, tenantID)
	if err != nil {
		return nil, err
	}
	if !ok || tp.Name != name {
		return nil, apperr.Rule(codeProcessorUnavailable,
			"The payment processor that collected this payment is no longer connected; reconnect it to refund or void the payment.")
	}
	return tp.Processor, nil
}

// processors is the configured source, or one that reports none, behind
// the guard that no call runs inside a transaction.
func (s *Service) processors() ProcessorSource {
	if s.cfg.Processors == nil {
		return guardedSource{staticProcessors{}}
	}
	return guardedSource{s.cfg.Processors}
}
