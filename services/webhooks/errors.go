package webhooks

import "github.com/almoner/almoner/pkg/apperr"

// Domain errors of the webhooks service.
var (
	errWebhookNotFound = apperr.NotFound("Webhook")
	errFeatureOff      = apperr.Forbidden("Feature not enabled: " + featureWebhooks)
)

// Field limits.
const (
	maxName        = 200
	maxDescription = 2000
	maxURL         = 2048
	maxEventTypes  = 100
)
