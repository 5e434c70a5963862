package webhooks

import (
	"github.com/google/uuid"
	"google.golang.org/protobuf/types/known/timestamppb"

	webhooksv1 "github.com/almoner/almoner/pkg/api/almoner/webhooks/v1"
	"github.com/almoner/almoner/services/webhooks/store"
)

func toWebhook(e store.Endpoint) *webhooksv1.Webhook {
	return &webhooksv1.Webhook{
		Id: e.ID.String(), Name: e.Name, Url: e.URL, EventTypes: e.EventTypes, Description: e.Description,
		Active: e.Active, CreatedAt: timestamppb.New(e.CreatedAt), UpdatedAt: timestamppb.New(e.UpdatedAt),
		DisabledReason: e.DisabledReason,
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
	if a.DeliveryID != uuid.Nil {
		id := a.DeliveryID.String()
		d.DeliveryId = &id
	}
	return d
}

// toDeliveryDetail renders a delivery with its attempts (oldest first).
func toDeliveryDetail(d store.Delivery, atts []store.Attempt) *webhooksv1.WebhookDeliveryDetail {
	out := &webhooksv1.WebhookDeliveryDetail{
		Id: d.ID.String(), EventId: d.EventID.String(), EventType: d.Event, State: d.State,
		CreatedAt: timestamppb.New(d.EnqueuedAt), Attempts: make([]*webhooksv1.WebhookAttempt, 0, len(atts)),
	}
	if d.State == "pending" {
		out.NextAttemptAt = timestamppb.New(d.NextAttemptAt)
	}
	if d.RedeliveryOf != nil {
		of := d.RedeliveryOf.String()
		out.RedeliveryOf = &of
	}
	for _, a := range atts {
		r := toDelivery(a)
		out.Attempts = append(out.Attempts, &webhooksv1.WebhookAttempt{
			Id: r.Id, AttemptNumber: r.AttemptNumber, AttemptedAt: r.AttemptedAt, Success: r.Success,
			StatusCode: r.StatusCode, DurationMs: r.DurationMs, Error: r.Error,
		})
	}
	return out
}
