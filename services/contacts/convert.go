package contacts

import (
	"encoding/json"

	"google.golang.org/protobuf/types/known/structpb"
	"google.golang.org/protobuf/types/known/timestamppb"

	contactsv1 "github.com/almoner/almoner/pkg/api/almoner/contacts/v1"
	ordersv1 "github.com/almoner/almoner/pkg/api/almoner/orders/v1"
	"github.com/almoner/almoner/pkg/audit"
	"github.com/almoner/almoner/services/contacts/store"
)

func optional(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

func toContact(c store.Contact) *contactsv1.Contact {
	out := &contactsv1.Contact{
		Id:               c.ID,
		ContactType:      c.Type,
		FirstName:        optional(c.FirstName),
		LastName:         optional(c.LastName),
		OrganizationName: optional(c.OrganizationName),
		Phones:           make([]*contactsv1.Phone, len(c.Phones)),
		Emails:           make([]*contactsv1.Email, len(c.Emails)),
		Addresses:        make([]*contactsv1.Address, len(c.Addresses)),
		IsActive:         c.IsActive,
		CreatedAt:        timestamppb.New(c.CreatedAt),
		UpdatedAt:        timestamppb.New(c.UpdatedAt),
		Tags:             c.Tags,
		CommunicationPreferences: &contactsv1.CommunicationPreferences{
			DoNotEmail: c.DoNotEmail, DoNotMail: c.DoNotMail, DoNotCall: c.DoNotCall, DoNotAcknowledge: c.DoNotAcknowledge,
		},
		ExternalId:     optional(c.ExternalID),
		Notes:          optional(c.Notes),
		Relationships:  toRelationships(c.Relationships),
		AssignedUserId: optional(c.AssignedUserID),
	}
	for i, p := range c.Phones {
		out.Phones[i] = &contactsv1.Phone{Id: p.ID, PhoneNumber: p.Number, PhoneType: p.Type, IsPrimary: p.IsPrimary}
	}
	for i, e := range c.Emails {
		out.Emails[i] = &contactsv1.Email{Id: e.ID, EmailAddress: e.Address, EmailType: e.Type, IsPrimary: e.IsPrimary}
	}
	for i, a := range c.Addresses {
		out.Addresses[i] = &contactsv1.Address{
			Id: a.ID, AddressType: a.Type, IsPrimary: a.IsPrimary, Line1: a.Line1, Line2: optional(a.Line2),
			City: optional(a.City), StateProvince: optional(a.StateProvince), PostalCode: optional(a.PostalCode),
			Country: optional(a.Country),
		}
	}
	return out
}

func toRelationships(rels []store.Relationship) []*contactsv1.ContactRelationship {
	out := make([]*contactsv1.ContactRelationship, len(rels))
	for i, r := range rels {
		out[i] = &contactsv1.ContactRelationship{
			RelatedContactId: r.RelatedID, RelationshipType: r.Type,
			RelatedContactName: r.RelatedName, RelatedContactType: r.RelatedType,
		}
	}
	return out
}

// toDashboard puts the contact and the orders service's figures together.
func toDashboard(c store.Contact, g *ordersv1.GetContactGivingSummaryResponse) *contactsv1.ContactDashboard {
	contact := toContact(c)
	d := &contactsv1.ContactDashboard{
		Contact:            contact,
		GivingTotals:       make([]*contactsv1.GivingTotal, 0, len(g.GetTotals())),
		RecentOrders:       make([]*contactsv1.DashboardOrder, 0, len(g.GetRecentOrders())),
		RecurringSchedules: make([]*contactsv1.DashboardSchedule, 0, len(g.GetActiveSchedules())),
		Tags:               contact.GetTags(),
		Organizations:      []*contactsv1.ContactRelationship{},
		Relationships:      contact.GetRelationships(),
	}
	for _, r := range contact.GetRelationships() {
		if r.GetRelationshipType() == store.Employer {
			d.Organizations = append(d.Organizations, r)
		}
	}
	for _, t := range g.GetTotals() {
		d.GivingTotals = append(d.GivingTotals, &contactsv1.GivingTotal{
			Currency: t.GetCurrency(), LifetimeTotal: t.GetLifetimeTotal(), GiftCount: t.GetGiftCount(),
			FirstGift: toGift(t.GetFirstGift()), LastGift: toGift(t.GetLastGift()), LargestGift: toGift(t.GetLargestGift()),
			ThisYear: t.GetThisYear(), LastYear: t.GetLastYear(),
		})
	}
	for _, o := range g.GetRecentOrders() {
		d.RecentOrders = append(d.RecentOrders, &contactsv1.DashboardOrder{
			Id: o.GetId(), OrderNumber: o.GetOrderNumber(), Date: o.GetDate(), Total: o.GetTotal(),
			Currency: o.GetCurrency(), Status: o.GetStatus(),
		})
	}
	for _, s := range g.GetActiveSchedules() {
		d.RecurringSchedules = append(d.RecurringSchedules, &contactsv1.DashboardSchedule{
			Id: s.GetId(), Amount: s.GetAmount(), Currency: s.GetCurrency(), Frequency: s.GetFrequency(),
			NextChargeDate: s.GetNextChargeDate(),
		})
	}
	return d
}

func toGift(g *ordersv1.Gift) *contactsv1.GiftSummary {
	if g == nil {
		return nil
	}
	return &contactsv1.GiftSummary{Date: g.GetDate(), Amount: g.GetAmount()}
}

// toAuditEntry converts an audit row; changes is JSON written by
// audit.Record, so it always decodes to an object.
func toAuditEntry(e audit.Event) (*contactsv1.AuditLogEntry, error) {
	out := &contactsv1.AuditLogEntry{
		Id: e.Seq, EventId: e.EventID, Event: e.Event, EntityType: e.EntityType, EntityId: e.EntityID,
		Action: e.Action, UserId: e.Actor, Timestamp: timestamppb.New(e.OccurredAt),
	}
	if len(e.Changes) > 0 {
		var m map[string]any
		if err := json.Unmarshal(e.Changes, &m); err != nil {
			return nil, err
		}
		st, err := structpb.NewStruct(m)
		if err != nil {
			return nil, err
		}
		out.Changes = st
	}
	return out, nil
}
