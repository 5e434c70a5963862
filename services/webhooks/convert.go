package webhooks

import (
	"google.golang.org/protobuf/types/known/timestamppb"

	webhooksv1 "github.com/almoner/almoner/pkg/api/almoner/webhooks/v1"
	"github.com/almoner/almoner/services/webhooks/store"
)

func toWebhook(e store.Endpoint) *webhooksv1.Webhook {
	return &webhooksv1.Webhook{
		Id: e.ID.String(), Name: e.Name, Url: e.URL, EventTypes: e.EventTypes, Description: e.Description,
		Active: e.Active, CreatedAt: timestamppb.New(e.CreatedAt), UpdatedAt: timestamppb.New(e.UpdatedAt),
	}
}

func toDelivery(a store.Attempt) *webhooksv1.WebhookDelivery {
	d := &webhooksv1.WebhookDelivery{
		Id: a.ID.String(), EventId: a.EventID.String(), EventType: a.Event, AttemptNumber: int32(a.Attempt),
		AttemptedAt: timestamppb.New(a.AttemptedAt), Success: a.Success, DurationMs: a.Duration.Milliseconds(),
		Abandoned: a.Abandoned,
	}
	if a.StatusCode != 0 {
		c := int32(a.StatusCode)
		d.StatusCode = &c
	}
	if a.Error != "" {
		e := a.Error
		d.Error = &e
	}
	return d
}
