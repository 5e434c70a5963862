package gateway

import (
	"net/http"

	"github.com/grpc-ecosystem/grpc-gateway/v2/runtime"

	ordersv1 "github.com/almoner/almoner/pkg/api/almoner/orders/v1"
)

// stripeNotificationPath is where a tenant's Stripe account sends its
// events: public (Stripe holds no API key), outside the supported surface.
const stripeNotificationPath = "/api/webhooks/stripe/{tenant_slug}"

// registerNotifications routes processor notifications to the orders
// service. They are not grpc-gateway routes of a proto mapping because
// the signature covers the exact bytes received: the body goes through
// raw, never decoded and re-encoded, with the Stripe-Signature header.
func (g *Gateway) registerNotifications(mux *runtime.ServeMux) error {
	conn := g.conns["orders"]
	if conn == nil {
		return nil
	}
	client := ordersv1.NewProcessorNotificationServiceClient(conn)
	return mux.HandlePath(http.MethodPost, stripeNotificationPath, func(w http.ResponseWriter, r *http.Request, params map[string]string) {
		ctx, err := runtime.AnnotateContext(r.Context(), g.mux, r, ordersv1.ProcessorNotificationService_ReceiveStripeEvent_FullMethodName,
			runtime.WithHTTPPathPattern(stripeNotificationPath))
		if err != nil {
			g.handleError(r.Context(), g.mux, codec{}, w, r, err)
			return
		}
		resp, err := client.ReceiveStripeEvent(ctx, &ordersv1.ReceiveStripeEventRequest{
			TenantSlug: params["tenant_slug"], Payload: heldBody(r), Signature: r.Header.Get("Stripe-Signature")})
		if err != nil {
			g.handleError(ctx, g.mux, codec{}, w, r, err)
			return
		}
		g.writeMessage(ctx, w, r, http.StatusOK, resp)
	})
}

// heldBody is the body admitBody read and holds in the budget, itself: a
// copy (io.ReadAll's, growing by doubling from 512 bytes) would be memory
// the budget does not count. Empty when the request had no body.
func heldBody(r *http.Request) []byte {
	if b, ok := r.Body.(*bufferedBody); ok {
		return b.unread()
	}
	return nil
}
