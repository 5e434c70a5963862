package console

import (
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"
)

// signedIn is the sign-in body (docs/auth.md).
type signedIn struct {
	User struct {
		ID        string `json:"id"`
		Email     string `json:"email"`
		FirstName string `json:"firstName"`
		LastName  string `json:"lastName"`
	} `json:"user"`
	MfaRequired  bool         `json:"mfaRequired"`
	MfaMethods   []string     `json:"mfaMethods"`
	Memberships  []membership `json:"memberships"`
	PlatformRole string       `json:"platformRole"`
}

type membership struct {
	TenantID   string `json:"tenantId"`
	TenantName string `json:"tenantName"`
	Role       string `json:"role"`
}

// The one-time tokens of the emails' links are moved from the URL into a
// cookie of the page that uses them at once (landing), so that the token
// leaves the address bar, the history and any Referer.
const (
	invitationCookie = "almoner_console_invitation"
	resetCookie      = "almoner_console_reset"
)

// session reads the signed-in user. Without a session the browser is sent
// to the sign-in page and ok is false.
func (c *Console) session(w http.ResponseWriter, r *http.Request) (*signedIn, bool) {
	res := c.get(r, "/api/auth/session")
	if res.Status == http.StatusUnauthorized {
		http.Redirect(w, r, Prefix+"/sign-in", http.StatusSeeOther)
		return nil, false
	}
	var s signedIn
	if !res.ok() || res.decode(&s) != nil {
		c.render(w, r, res.Status, "message", &page{Title: "Error", Error: res.message()})
		return nil, false
	}
	return &s, true
}

type signInData struct {
	Email   string
	Methods []string
	Sent    bool
}

func (c *Console) signInPage(w http.ResponseWriter, r *http.Request) {
	c.render(w, r, http.StatusOK, "signin", &page{Title: "Sign in", Flash: flash(r), Data: signInData{}})
}

// signInPost checks the password through POST /api/auth/sign-in (with
// the trusted-device cookie), passes the new session cookie on and goes
// to the second factor when the answer asks for it.
func (c *Console) signInPost(w http.ResponseWriter, r *http.Request) {
	email := strings.TrimSpace(r.PostFormValue("email"))
	res := c.call(r, http.MethodPost, "/api/auth/sign-in",
		map[string]string{"email": email, "password": r.PostFormValue("password")}, true)
	var s signedIn
	if !res.ok() || res.decode(&s) != nil {
		msg := res.message()
		if res.Status == http.StatusUnauthorized {
			msg = "The email or the password is wrong."
		}
		c.render(w, r, statusOf(res), "signin", &page{Title: "Sign in", Error: msg, Data: signInData{Email: email}})
		return
	}
	passCookies(w, res)
	if s.MfaRequired {
		q := url.Values{"methods": {strings.Join(s.MfaMethods, ",")}}
		http.Redirect(w, r, Prefix+"/sign-in/verify?"+q.Encode(), http.StatusSeeOther)
		return
	}
	http.Redirect(w, r, Prefix+"/", http.StatusSeeOther)
}

// methodsOf reads the factors the verify page offers from its query (the
// sign-in answer's mfaMethods; a pending session may read nothing else).
func methodsOf(r *http.Request) []string {
	var out []string
	for _, m := range strings.Split(r.FormValue("methods"), ",") {
		if slices.Contains([]string{"totp", "email", "recovery"}, m) && !slices.Contains(out, m) {
			out = append(out, m)
		}
	}
	if len(out) == 0 {
		out = []string{"totp", "email", "recovery"}
	}
	return out
}

func (c *Console) verifyPage(w http.ResponseWriter, r *http.Request) {
	c.render(w, r, http.StatusOK, "verify", &page{Title: "Second factor", Data: signInData{Methods: methodsOf(r)}})
}

// verifyPost passes the second factor: POST /api/auth/mfa/verify.
func (c *Console) verifyPost(w http.ResponseWriter, r *http.Request) {
	method := r.PostFormValue("method")
	body := map[string]any{"method": method, "code": strings.TrimSpace(r.PostFormValue("code")),
		"rememberDevice": r.PostFormValue("remember") == "on"}
	res := c.send(r, http.MethodPost, "/api/auth/mfa/verify", body)
	if !res.ok() {
		msg := res.message()
		if res.Status == http.StatusBadRequest {
			msg = "That code is wrong, used or expired. " + msg
		}
		if res.Status == http.StatusUnauthorized {
			msg = "The sign-in has expired. Sign in again."
		}
		c.render(w, r, statusOf(res), "verify", &page{Title: "Second factor", Error: msg, Data: signInData{Methods: methodsOf(r)}})
		return
	}
	passCookies(w, res)
	http.Redirect(w, r, Prefix+"/", http.StatusSeeOther)
}

// sendCodePost mails a sign-in code: POST /api/auth/mfa/email/send.
func (c *Console) sendCodePost(w http.ResponseWriter, r *http.Request) {
	res := c.send(r, http.MethodPost, "/api/auth/mfa/email/send", map[string]any{})
	p := &page{Title: "Second factor", Data: signInData{Methods: methodsOf(r), Sent: res.ok()}}
	if res.ok() {
		p.Flash = "A code is on its way to your email. It works for 10 minutes."
	} else {
		p.Error = res.message()
	}
	c.render(w, r, statusOf(res), "verify", p)
}

func (c *Console) signOutPost(w http.ResponseWriter, r *http.Request) {
	res := c.send(r, http.MethodPost, "/api/auth/sign-out", map[string]any{})
	passCookies(w, res)
	// The cookie goes whatever the API answered: a session it no longer
	// knows is signed out too.
	http.SetCookie(w, &http.Cookie{Name: sessionCookie, Value: "", Path: "/", MaxAge: -1, HttpOnly: true, SameSite: http.SameSiteLaxMode})
	redirect(w, r, Prefix+"/sign-in", "signed-out")
}

// landing takes the token of an email's link out of the URL at once: it
// goes into an HttpOnly cookie of the page that uses it (15 minutes) and
// the browser is sent to that page without it.
func (c *Console) landing(target, cookie string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		token := r.URL.Query().Get("token")
		if token != "" {
			http.SetCookie(w, &http.Cookie{Name: cookie, Value: token, Path: target, MaxAge: int((15 * time.Minute).Seconds()),
				HttpOnly: true, Secure: r.TLS != nil, SameSite: http.SameSiteStrictMode})
		}
		http.Redirect(w, r, target, http.StatusSeeOther)
	}
}

// tokenFrom exchanges a token still in the URL (a link straight to the
// console's page) like landing does, and reports whether it did.
func (c *Console) tokenFrom(w http.ResponseWriter, r *http.Request, cookie string) bool {
	if r.URL.Query().Get("token") == "" {
		return false
	}
	c.landing(r.URL.Path, cookie)(w, r)
	return true
}

func (c *Console) acceptPage(w http.ResponseWriter, r *http.Request) {
	if c.tokenFrom(w, r, invitationCookie) {
		return
	}
	if _, err := r.Cookie(invitationCookie); err != nil {
		c.render(w, r, http.StatusBadRequest, "message", &page{Title: "Accept the invitation",
			Error: "Open the link of your invitation email again: this page needs its token."})
		return
	}
	c.render(w, r, http.StatusOK, "accept", &page{Title: "Accept the invitation"})
}

// acceptPost accepts through POST /api/auth/invitations/accept and signs
// in with the answer's session.
func (c *Console) acceptPost(w http.ResponseWriter, r *http.Request) {
	ck, err := r.Cookie(invitationCookie)
	if err != nil {
		c.render(w, r, http.StatusBadRequest, "message", &page{Title: "Accept the invitation",
			Error: "Open the link of your invitation email again: this page needs its token."})
		return
	}
	body := map[string]string{"token": ck.Value, "password": r.PostFormValue("password"),
		"firstName": strings.TrimSpace(r.PostFormValue("firstName")), "lastName": strings.TrimSpace(r.PostFormValue("lastName"))}
	res := c.send(r, http.MethodPost, "/api/auth/invitations/accept", body)
	var s signedIn
	if !res.ok() || res.decode(&s) != nil {
		c.render(w, r, statusOf(res), "accept", &page{Title: "Accept the invitation", Error: res.message()})
		return
	}
	http.SetCookie(w, &http.Cookie{Name: invitationCookie, Path: Prefix + "/accept-invitation", MaxAge: -1})
	passCookies(w, res)
	if s.MfaRequired {
		q := url.Values{"methods": {strings.Join(s.MfaMethods, ",")}}
		http.Redirect(w, r, Prefix+"/sign-in/verify?"+q.Encode(), http.StatusSeeOther)
		return
	}
	http.Redirect(w, r, Prefix+"/security", http.StatusSeeOther)
}

func (c *Console) resetPage(w http.ResponseWriter, r *http.Request) {
	if c.tokenFrom(w, r, resetCookie) {
		return
	}
	_, err := r.Cookie(resetCookie)
	c.render(w, r, http.StatusOK, "reset", &page{Title: "Reset your password", Flash: flash(r), Data: err == nil})
}

// resetPost sets the new password: POST /api/auth/password-reset/confirm.
func (c *Console) resetPost(w http.ResponseWriter, r *http.Request) {
	ck, err := r.Cookie(resetCookie)
	if err != nil {
		c.render(w, r, http.StatusBadRequest, "reset", &page{Title: "Reset your password", Data: false,
			Error: "Open the link of your reset email again: this page needs its token."})
		return
	}
	res := c.send(r, http.MethodPost, "/api/auth/password-reset/confirm", map[string]string{"token": ck.Value, "password": r.PostFormValue("password")})
	if !res.ok() {
		c.render(w, r, statusOf(res), "reset", &page{Title: "Reset your password", Data: true, Error: res.message()})
		return
	}
	http.SetCookie(w, &http.Cookie{Name: resetCookie, Path: Prefix + "/reset-password", MaxAge: -1})
	redirect(w, r, Prefix+"/sign-in", "password-set")
}

// forgotPost asks for a reset link: POST /api/auth/password-reset (202
// whether or not the address has an account).
func (c *Console) forgotPost(w http.ResponseWriter, r *http.Request) {
	res := c.send(r, http.MethodPost, "/api/auth/password-reset", map[string]string{"email": strings.TrimSpace(r.PostFormValue("email"))})
	if !res.ok() {
		c.render(w, r, statusOf(res), "reset", &page{Title: "Reset your password", Data: false, Error: res.message()})
		return
	}
	redirect(w, r, Prefix+"/reset-password", "reset-sent")
}

// statusOf is the status a page answers for a refused call: the API's
// own for a client error, 502 for anything else.
func statusOf(res result) int {
	if res.Status >= 400 && res.Status < 500 {
		return res.Status
	}
	if res.ok() {
		return http.StatusOK
	}
	return http.StatusBadGateway
}
