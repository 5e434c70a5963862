package templates

import "strings"

// Address is a postal address's merge fields.
type Address struct {
	Line1, Line2, City, StateProvince, PostalCode, Country string
}

func (a Address) fields() map[string]any {
	return map[string]any{"line1": a.Line1, "line2": a.Line2, "city": a.City, "stateProvince": a.StateProvince,
		"postalCode": a.PostalCode, "country": a.Country}
}

// Contact is the donor's merge fields.
type Contact struct {
	FirstName, LastName, Name string
	Address                   Address
}

// Salutation is "Dear <first name>", "Dear <name>" for an organization,
// "Dear Friend" for a contact with neither.
func (c Contact) Salutation() string {
	switch {
	case strings.TrimSpace(c.FirstName) != "":
		return "Dear " + strings.TrimSpace(c.FirstName)
	case strings.TrimSpace(c.Name) != "":
		return "Dear " + strings.TrimSpace(c.Name)
	}
	return "Dear Friend"
}

// Organization is the tenant's merge fields.
type Organization struct {
	LegalName, TaxID, Email, Phone, Website, SignatureName, SignatureTitle string
	Address                                                                Address
}

// Gift is a gift's merge fields, each already formatted (an amount in its
// currency: "USD 80.00").
type Gift struct {
	Amount, Date, Fund, OrderNumber, DeductibleAmount, GoodsAndServicesValue string
	TributeType, TributeName                                                 string
}

func (g Gift) fields() map[string]any {
	return map[string]any{"amount": g.Amount, "date": g.Date, "fund": g.Fund, "orderNumber": g.OrderNumber,
		"deductibleAmount": g.DeductibleAmount, "goodsAndServicesValue": g.GoodsAndServicesValue,
		"tribute": map[string]any{"type": g.TributeType, "name": g.TributeName}}
}

// Merge is what a document's template is filled with. Its Data holds only
// maps, slices and strings: Mustache calls functions and reads methods it
// finds in its data, so nothing else may reach it.
type Merge struct {
	Contact      Contact
	Organization Organization
	Today        string
	// Gift is set for acknowledgements and receipts; Gifts, Total and Year
	// for statements.
	Gift  Gift
	Gifts []Gift
	Total string
	Year  string
}

// Data is m as a template's context.
func (m Merge) Data() map[string]any {
	o := m.Organization
	gifts := make([]any, len(m.Gifts))
	for i, g := range m.Gifts {
		gifts[i] = g.fields()
	}
	return map[string]any{
		"contact": map[string]any{"firstName": m.Contact.FirstName, "lastName": m.Contact.LastName,
			"salutation": m.Contact.Salutation(), "address": m.Contact.Address.fields()},
		"organization": map[string]any{"legalName": o.LegalName, "taxId": o.TaxID, "email": o.Email, "phone": o.Phone,
			"website": o.Website, "signatureName": o.SignatureName, "signatureTitle": o.SignatureTitle, "address": o.Address.fields()},
		"today": m.Today,
		"gift":  m.Gift.fields(),
		"gifts": gifts,
		"total": m.Total,
		"year":  m.Year,
	}
}

// Sample is the merge of a preview without a gift.
func Sample(org Organization, today string) Merge {
	g := Gift{Amount: "USD 100.00", Date: today, Fund: "General Fund", OrderNumber: "1001", DeductibleAmount: "USD 100.00",
		GoodsAndServicesValue: "USD 0.00"}
	return Merge{
		Contact:      Contact{FirstName: "Sam", LastName: "Sample", Name: "Sam Sample", Address: Address{Line1: "1 Sample Street", City: "Springfield", PostalCode: "00000", Country: "US"}},
		Organization: org, Today: today, Gift: g, Gifts: []Gift{g}, Total: "USD 100.00", Year: today[:4],
	}
}
