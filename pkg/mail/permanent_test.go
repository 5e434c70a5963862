package mail

import "testing"

// smtpPermanent tells a 5xx reply in a SendError's text from a 4xx one
// and from a lost connection.
func TestSMTPPermanentReply(t *testing.T) {
	for text, want := range map[string]bool{
		"failed to set mail recipient: 550 5.1.1 <x@example.org>: no such user": true,
		"failed to send mail: 554-5.7.1 rejected":                               true,
		"failed to set mail recipient: 450 4.2.0 mailbox busy":                  false,
		"failed to send mail: write tcp 127.0.0.1:1->127.0.0.1:2: broken pipe":  false,
		"failed to send mail: dial tcp: lookup 550.example: no such host":       false,
	} {
		if got := smtpPermanent.MatchString(text); got != want {
			t.Errorf("%q: permanent = %v, want %v", text, got, want)
		}
	}
}
