package webhooks

import (
	"fmt"

	"github.com/almoner/almoner/pkg/apperr"
)

// Domain errors of the webhooks service.
var (
	errWebhookNotFound = apperr.NotFound("Webhook")
	errFeatureOff      = apperr.Forbidden("Feature not enabled: " + featureWebhooks)
)

// codeEndpointLimit is the typed code of the 400 for a tenant at its cap of
// active endpoints (Config.EndpointLimit).
const codeEndpointLimit = "Webhook.LimitReached"

// endpointLimitError is the business-rule failure of a registration or a
// switch back on that would pass the tenant's cap; it names the cap.
func (s *Service) endpointLimitError() error {
	return apperr.Rule(codeEndpointLimit, fmt.Sprintf(
		"The tenant already has %d active webhook endpoints, the most it may have; delete or deactivate one first.", s.cfg.EndpointLimit))
}

// Field limits.
const (
	maxName        = 200
	maxDescription = 2000
	maxURL         = 2048
	maxEventTypes  = 100
)
