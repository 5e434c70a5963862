package contacts

import (
	"strings"
	"testing"

	contactsv1 "github.com/almoner/almoner/pkg/api/almoner/contacts/v1"
	"github.com/almoner/almoner/pkg/apperr"
	"github.com/almoner/almoner/services/contacts/store"
)

func str(s string) *string { return &s }

func violationsOf(t *testing.T, err error) map[string]string {
	t.Helper()
	e, ok := apperr.As(err)
	if !ok || e.Kind != apperr.KindInvalid {
		t.Fatalf("want a validation error, got %v", err)
	}
	out := map[string]string{}
	for _, v := range e.Violations {
		out[v.Field] = v.Message
	}
	return out
}

func TestValidateContactViolations(t *testing.T) {
	t.Parallel()
	long := strings.Repeat("x", 101)
	cases := []struct {
		name string
		in   *contactsv1.ContactInput
		want map[string]string // field → part of the message
	}{
		{"empty body", &contactsv1.ContactInput{}, map[string]string{"ContactType": "must not be empty"}},
		{"unknown type", &contactsv1.ContactInput{ContactType: "Household", LastName: str("Doe")}, map[string]string{"ContactType": "Individual or Organization"}},
		{"individual without last name or email", &contactsv1.ContactInput{ContactType: "Individual", FirstName: str("Jane")}, map[string]string{"LastName": "no email"}},
		{"organization without name", &contactsv1.ContactInput{ContactType: "Organization"}, map[string]string{"OrganizationName": "must not be empty"}},
		{"long names", &contactsv1.ContactInput{ContactType: "Individual", FirstName: &long, LastName: &long}, map[string]string{
			"FirstName": "100 characters", "LastName": "100 characters"}},
		{"control characters", &contactsv1.ContactInput{ContactType: "Individual", LastName: str("Do\x00e")}, map[string]string{"LastName": "control characters"}},
		{"bad email", &contactsv1.ContactInput{ContactType: "Individual", Emails: []*contactsv1.Email{
			{EmailAddress: "jane@example.org"}, {EmailAddress: "not-an-email"}, {EmailAddress: ""}}},
			map[string]string{"Emails[1].EmailAddress": "not a valid email", "Emails[2].EmailAddress": "must not be empty"}},
		{"repeated email", &contactsv1.ContactInput{ContactType: "Individual", Emails: []*contactsv1.Email{
			{EmailAddress: "jane@example.org"}, {EmailAddress: "JANE@example.org"}}}, map[string]string{"Emails[1].EmailAddress": "repeats Emails[0]"}},
		{"two primaries", &contactsv1.ContactInput{ContactType: "Individual", Emails: []*contactsv1.Email{
			{EmailAddress: "a@example.org", IsPrimary: true}, {EmailAddress: "b@example.org", IsPrimary: true}}}, map[string]string{"Emails[1].IsPrimary": "Only one email"}},
		{"bad row types", &contactsv1.ContactInput{ContactType: "Individual", LastName: str("Doe"),
			Emails:    []*contactsv1.Email{{EmailAddress: "a@example.org", EmailType: "Pager"}},
			Phones:    []*contactsv1.Phone{{PhoneNumber: "555-123-4567", PhoneType: "Pager"}},
			Addresses: []*contactsv1.Address{{Line1: "1 Main St", AddressType: "Castle"}}},
			map[string]string{"Emails[0].EmailType": "Personal, Work, Other", "Phones[0].PhoneType": "Mobile", "Addresses[0].AddressType": "Billing"}},
		{"bad phone", &contactsv1.ContactInput{ContactType: "Individual", LastName: str("Doe"), Phones: []*contactsv1.Phone{{PhoneNumber: "12"}}},
			map[string]string{"Phones[0].PhoneNumber": "7 to 15 digits"}},
		{"bad address", &contactsv1.ContactInput{ContactType: "Individual", LastName: str("Doe"), Addresses: []*contactsv1.Address{
			{Line1: "1 Main St", Country: str("US"), PostalCode: str("02134")},
			{Line1: "", Country: str("XX"), PostalCode: str("12#34")}}},
			map[string]string{"Addresses[1].Line1": "must not be empty", "Addresses[1].Country": "ISO 3166-1", "Addresses[1].PostalCode": "Postal Code"}},
		{"too many rows", &contactsv1.ContactInput{ContactType: "Individual", LastName: str("Doe"), Phones: make([]*contactsv1.Phone, 11)},
			map[string]string{"Phones": "10 items or fewer"}},
		{"tags", &contactsv1.ContactInput{ContactType: "Individual", LastName: str("Doe"), Tags: []string{"ok", " ", strings.Repeat("t", 51)}},
			map[string]string{"Tags[1]": "must not be empty", "Tags[2]": "50 characters"}},
		{"notes and external id", &contactsv1.ContactInput{ContactType: "Individual", LastName: str("Doe"),
			Notes: str(strings.Repeat("n", 4001)), ExternalId: str(strings.Repeat("e", 101))},
			map[string]string{"Notes": "4000 characters", "ExternalId": "100 characters"}},
		{"assigned user not an id", &contactsv1.ContactInput{ContactType: "Individual", LastName: str("Doe"), AssignedUserId: str("jane")},
			map[string]string{"AssignedUserId": "staff user of the tenant"}},
		{"assigned user empty", &contactsv1.ContactInput{ContactType: "Individual", LastName: str("Doe"), AssignedUserId: str("")},
			map[string]string{"AssignedUserId": "staff user of the tenant"}},
		{"relationships", &contactsv1.ContactInput{ContactType: "Individual", LastName: str("Doe"), Relationships: []*contactsv1.ContactRelationshipInput{
			{RelatedContactId: 0, RelationshipType: "Spouse"},
			{RelatedContactId: 7, RelationshipType: "Cousin"},
			{RelatedContactId: 8, RelationshipType: "Employee"},
			{RelatedContactId: 9, RelationshipType: "Spouse"},
			{RelatedContactId: 9, RelationshipType: "spouse"},
			{RelatedContactId: 42, RelationshipType: "Spouse"}}},
			map[string]string{
				"Relationships[0].RelatedContactId": "Related contact id must be greater than 0.",
				"Relationships[1].RelationshipType": "must be one of",
				"Relationships[2].RelationshipType": "Employee is for organizations",
				"Relationships[4].RelatedContactId": "repeats Relationships[3]",
				"Relationships[5].RelatedContactId": "cannot be related to itself",
			}},
	}
	for _, c := range cases {
		_, err := validateContact(c.in, modeStore, 42)
		got := violationsOf(t, err)
		if len(got) != len(c.want) {
			t.Errorf("%s: violations %v, want keys of %v", c.name, got, c.want)
		}
		for k, frag := range c.want {
			if !strings.Contains(got[k], frag) {
				t.Errorf("%s: %s = %q, want it to mention %q", c.name, k, got[k], frag)
			}
		}
	}
}

func TestValidateContactNormalizes(t *testing.T) {
	t.Parallel()
	f, err := validateContact(&contactsv1.ContactInput{
		ContactType: "individual", FirstName: str("  Jane "), LastName: str(""),
		Emails:    []*contactsv1.Email{{EmailAddress: " Jane@Example.org "}},
		Phones:    []*contactsv1.Phone{{PhoneNumber: "(555) 123-4567", PhoneType: "mobile"}, {PhoneNumber: "+1 555 765 4321", IsPrimary: true}},
		Addresses: []*contactsv1.Address{{Line1: "1 Main St", Country: str("us"), PostalCode: str("02134-1234")}},
		Tags:      []string{"Donor", "donor", " VIP "},
		// An id in capitals is stored as auth writes it.
		AssignedUserId: str("0193A000-0000-7000-8000-00000000000A"),
	}, modeStore, 0)
	if err != nil {
		t.Fatal(err)
	}
	if f.Type != store.Individual || f.FirstName != "Jane" || f.LastName != "" || !f.IsActive {
		t.Errorf("fields = %+v", f)
	}
	if e := f.Emails[0]; e.Address != "Jane@Example.org" || e.Key != "jane@example.org" || e.Type != "Other" || !e.IsPrimary {
		t.Errorf("email = %+v", e)
	}
	if p := f.Phones; p[0].Type != "Mobile" || p[0].IsPrimary || !p[1].IsPrimary || p[0].Key != "5551234567" {
		t.Errorf("phones = %+v", p)
	}
	if a := f.Addresses[0]; a.Country != "US" || a.PostalKey != "02134" || a.PostalCode != "02134-1234" || !a.IsPrimary {
		t.Errorf("address = %+v", a)
	}
	if strings.Join(f.Tags, ",") != "Donor,VIP" {
		t.Errorf("tags = %v", f.Tags)
	}
	if f.AssignedUserID != "0193a000-0000-7000-8000-00000000000a" {
		t.Errorf("assigned user = %q", f.AssignedUserID)
	}
	// A duplicate-check candidate needs no type and no name.
	if _, err := validateContact(&contactsv1.ContactInput{Emails: []*contactsv1.Email{{EmailAddress: "a@example.org"}}}, modeCandidate, 0); err != nil {
		t.Errorf("candidate: %v", err)
	}
}

func TestRankDuplicates(t *testing.T) {
	t.Parallel()
	got := rankDuplicates([]store.Hit{
		{ContactID: 3, Field: "Name", Similarity: 0.6},
		{ContactID: 1, Field: "Email", Similarity: 1},
		{ContactID: 2, Field: "Phone", Similarity: 1},
		{ContactID: 1, Field: "Phone", Similarity: 1},
		{ContactID: 4, Field: "Email", Similarity: 1},
	})
	want := []struct {
		id     int64
		score  float64
		fields string
	}{{1, 0.97, "Email,Phone"}, {4, 0.9, "Email"}, {2, 0.7, "Phone"}, {3, 0.48, "Name,PostalCode"}}
	if len(got) != len(want) {
		t.Fatalf("got %+v", got)
	}
	for i, w := range want {
		if got[i].id != w.id || got[i].score != w.score || strings.Join(got[i].fields, ",") != w.fields {
			t.Errorf("rank %d = %+v, want %+v", i, got[i], w)
		}
	}
}
