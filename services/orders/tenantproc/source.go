package tenantproc

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
	"github.com/almoner/almoner/services/orders/wire"
)

// Processor names, as stored with each payment.
const (
	ProviderTest   = "test"
	ProviderStripe = "stripe"
)

// Account is the processor one tenant's payments go through.
type Account struct {
	processor.Processor
	// Name is ProviderTest or ProviderStripe.
	Name string
	// Mode is "test" or "live": saved customers and methods belong to one.
	Mode string
}

// NotificationTarget is what a processor notification is checked and
// applied with.
type NotificationTarget struct {
	TenantID      string
	WebhookSecret string
}

// Source finds the processor of a tenant.
type Source interface {
	// ForTenant returns the tenant's processor; ok is false when the
	// tenant has none (a production tenant that has not connected Stripe).
	ForTenant(ctx context.Context, tenantID string) (p Account, ok bool, err error)
	// ForNotification returns the tenant and webhook secret behind a
	// notification URL's slug; ok is false for an unknown slug or a tenant
	// without that provider.
	ForNotification(ctx context.Context, provider, slug string) (t NotificationTarget, ok bool, err error)
}

// AuthSource reads each tenant's processor from the auth service (it
// owns tenant administration and keeps the keys sealed) on every use, and
// builds its Stripe client. The service keeps what it reads under the
// validation epoch (Cached), so that an operator's change still applies
// to the first payment after the change was answered.
type AuthSource struct {
	// Conn dials the auth service.
	Conn func() (grpc.ClientConnInterface, error)
	// APIBase is ALMONER_STRIPE_API_BASE.
	APIBase string
	// Sandbox keeps the test processor for tenants without Stripe.
	Sandbox bool
	// HTTP is shared by every tenant's Stripe adapter.
	HTTP *http.Client
}

func (a AuthSource) credentials(ctx context.Context, req *authv1.GetProcessorCredentialsRequest) (*authv1.GetProcessorCredentialsResponse, error) {
	conn, err := a.Conn()
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

// ForTenant reads the tenant's processor from the auth service.
func (a AuthSource) ForTenant(ctx context.Context, tenantID string) (Account, bool, error) {
	resp, err := a.credentials(ctx, &authv1.GetProcessorCredentialsRequest{TenantId: tenantID})
	if err != nil {
		return Account{}, false, err
	}
	if resp.GetConfigured() && resp.GetProvider() == ProviderStripe {
		p := stripeproc.New(stripeproc.Config{APIBase: a.APIBase, SecretKey: resp.GetSecretKey(), HTTPClient: a.HTTP})
		return Account{Processor: p, Name: ProviderStripe, Mode: resp.GetMode()}, true, nil
	}
	if a.Sandbox {
		return Account{Processor: processor.Test{}, Name: ProviderTest, Mode: "test"}, true, nil
	}
	return Account{}, false, nil
}

// ForNotification reads the tenant behind a notification URL's slug.
func (a AuthSource) ForNotification(ctx context.Context, provider, slug string) (NotificationTarget, bool, error) {
	resp, err := a.credentials(ctx, &authv1.GetProcessorCredentialsRequest{TenantSlug: slug})
	if status.Code(err) == codes.NotFound {
		return NotificationTarget{}, false, nil
	}
	if err != nil {
		return NotificationTarget{}, false, err
	}
	if !resp.GetConfigured() || resp.GetProvider() != provider || resp.GetWebhookSecret() == "" || !resp.GetTenantActive() {
		return NotificationTarget{}, false, nil
	}
	return NotificationTarget{TenantID: resp.GetTenantId(), WebhookSecret: resp.GetWebhookSecret()}, true, nil
}

// Static gives every tenant one processor: tests of this module
// that do not need auth.
type Static struct {
	P Account
}

// ForTenant answers the one account, ok when it has a processor.
func (s Static) ForTenant(context.Context, string) (Account, bool, error) {
	return s.P, s.P.Processor != nil, nil
}

// ForNotification knows no notification URL.
func (Static) ForNotification(context.Context, string, string) (NotificationTarget, bool, error) {
	return NotificationTarget{}, false, nil
}

// ByName returns the processor that collected a payment: the tenant's
// current one when it is the same provider. A payment of the test
// processor is always the test processor's, whatever the tenant uses now.
func ByName(ctx context.Context, src Source, tenantID, name string) (processor.Processor, error) {
	if name == ProviderTest {
		return guardedProcessor{processor.Test{}}, nil
	}
	tp, ok, err := src.ForTenant(ctx, tenantID)
	if err != nil {
		return nil, err
	}
	if !ok || tp.Name != name {
		return nil, apperr.Rule(wire.CodeProcessorUnavailable,
			"The payment processor that collected this payment is no longer connected; reconnect it to refund or void the payment.")
	}
	return tp.Processor, nil
}

// GiveBack takes back a charge of an order that was not recorded: a
// refund of amountMinor once the money moved, else a cancel. The
// idempotency key and the request are derived from the charge alone, so
// the undo of a failed request and the sweep of its abandoned claim
// (sweeper.go) are one and the same request at the processor, and a
// retried sweep never refunds twice. A refund the processor refuses
// because the charge is refunded already is done, not a failure: the
// processor forgets a key after a while (Stripe: 24 hours).
func GiveBack(ctx context.Context, p processor.Processor, ref string, outcome processor.Outcome, amountMinor int64) (processor.Refund, error) {
	if outcome != processor.Succeeded {
		return processor.Refund{}, p.Cancel(ctx, ref, "undo/"+ref)
	}
	re, err := p.Refund(ctx, processor.RefundRequest{IdempotencyKey: "undo/" + ref, Reference: ref, AmountMinor: amountMinor,
		Metadata: map[string]string{"reason": "order not recorded"}})
	if r, ok := processor.AsRefused(err); ok && r.Code == "charge_already_refunded" {
		return processor.Refund{}, nil
	}
	return re, err
}
