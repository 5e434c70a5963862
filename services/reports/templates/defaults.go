package templates

// Default is a kind's default template, as a tenant starts with it.
type Default struct {
	Kind, Name, Subject, Body, Format string
}

// Defaults are the default templates. Receipts and statements print what
// they printed before templates existed: their title and no text of their
// own (the figures, the legal lines, the signatory and the footer are
// printed by the system whatever the template says).
var Defaults = []Default{
	{KindAcknowledgement, "Thank-you letter", "Thank you for your gift, {{contact.firstName}}",
		"{{contact.salutation}},\n\nThank you for your generous gift of {{gift.amount}} to {{gift.fund}} on {{gift.date}}. " +
			"Your support makes our work possible.\n\nWith gratitude,", "text"},
	{KindReceipt, "Donation receipt", "Donation receipt", "", "text"},
	{KindStatement, "Giving statement", "Giving statement {{year}}", "", "text"},
}
