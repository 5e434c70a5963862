package console

import (
	"html/template"
	"net/http"
	"net/url"
	"strings"
)

type securityData struct {
	Mfa      mfaState
	Devices  []trustedDevice
	Sessions []sessionRow
	// Enroll is a TOTP enrollment in progress: its QR code and secret.
	Enroll *totpEnrollment
	// EmailStarted asks for the code just mailed to turn email codes on.
	EmailStarted bool
	// Codes are new recovery codes, shown this once.
	Codes []string
}

type totpEnrollment struct {
	Secret, OtpauthURL string
	QR                 template.HTML
}

func (c *Console) securityRoutes() {
	m := c.mux
	base := Prefix + "/security"
	m.HandleFunc("GET "+base, c.securityPage)
	m.HandleFunc("POST "+base+"/totp", c.totpStart)
	m.HandleFunc("POST "+base+"/totp/confirm", c.totpConfirm)
	m.HandleFunc("POST "+base+"/totp/off", c.factorOff("/api/auth/mfa/totp", "totp-off"))
	m.HandleFunc("POST "+base+"/email", c.emailStart)
	m.HandleFunc("POST "+base+"/email/confirm", c.emailConfirm)
	m.HandleFunc("POST "+base+"/email/off", c.factorOff("/api/auth/mfa/email", "email-off"))
	m.HandleFunc("POST "+base+"/recovery-codes", c.recoveryCodes)
	m.HandleFunc("POST "+base+"/devices/forget-all", c.securityDelete("/api/auth/mfa/trusted-devices", "devices-forgotten"))
	m.HandleFunc("POST "+base+"/devices/{id}/forget", c.securityDeleteID("/api/auth/mfa/trusted-devices/", "device-forgotten"))
	m.HandleFunc("POST "+base+"/sessions/{id}/end", c.securityDeleteID("/api/auth/sessions/", "session-ended"))
}

// securityState reads the user's factors, trusted browsers and sessions
// into p; false when the page cannot be shown (answered).
func (c *Console) securityState(w http.ResponseWriter, r *http.Request) (*page, *securityData, bool) {
	s, ok := c.session(w, r)
	if !ok {
		return nil, nil, false
	}
	p := &page{Title: "Security", Session: s, Banner: c.banner(r, s), Flash: flash(r)}
	d := &securityData{}
	res := c.get(r, "/api/auth/mfa")
	if !res.ok() || res.decode(&d.Mfa) != nil {
		c.refused(w, r, p, res)
		return nil, nil, false
	}
	if res := c.get(r, "/api/auth/mfa/trusted-devices"); res.ok() {
		_ = res.decode(&d.Devices)
	}
	if res := c.get(r, "/api/auth/sessions"); res.ok() {
		_ = res.decode(&d.Sessions)
	}
	p.Data = d
	return p, d, true
}

func (c *Console) securityPage(w http.ResponseWriter, r *http.Request) {
	if p, _, ok := c.securityState(w, r); ok {
		c.render(w, r, http.StatusOK, "security", p)
	}
}

// securityResult shows the security page after a call: its error, or
// what fill adds to the page.
func (c *Console) securityResult(w http.ResponseWriter, r *http.Request, res result, fill func(*securityData)) {
	p, d, ok := c.securityState(w, r)
	if !ok {
		return
	}
	if !res.ok() {
		p.Error = res.message()
	} else if fill != nil {
		fill(d)
	}
	c.render(w, r, statusOf(res), "security", p)
}

// enrollment renders a TOTP enrollment's QR code from its otpauth URL.
func enrollment(secret, otpauth string) *totpEnrollment {
	if !strings.HasPrefix(otpauth, "otpauth://totp/") {
		return nil
	}
	qr, err := qrSVG(otpauth)
	if err != nil {
		return nil
	}
	return &totpEnrollment{Secret: secret, OtpauthURL: otpauth, QR: qr}
}

// totpStart begins an enrollment (POST /api/auth/mfa/totp) and shows the
// QR code and the secret as text.
func (c *Console) totpStart(w http.ResponseWriter, r *http.Request) {
	res := c.send(r, http.MethodPost, "/api/auth/mfa/totp", map[string]any{})
	var out struct {
		Secret     string `json:"secret"`
		OtpauthURL string `json:"otpauthUrl"`
	}
	_ = res.decode(&out)
	c.securityResult(w, r, res, func(d *securityData) { d.Enroll = enrollment(out.Secret, out.OtpauthURL) })
}

// totpConfirm turns TOTP on with a code (POST …/totp/confirm); the first
// factor answers the recovery codes, shown this once. A wrong code shows
// the same enrollment again (from the form: the page had it already).
func (c *Console) totpConfirm(w http.ResponseWriter, r *http.Request) {
	res := c.send(r, http.MethodPost, "/api/auth/mfa/totp/confirm", map[string]string{"code": strings.TrimSpace(r.PostFormValue("code"))})
	if !res.ok() {
		p, d, ok := c.securityState(w, r)
		if !ok {
			return
		}
		d.Enroll = enrollment(r.PostFormValue("secret"), r.PostFormValue("otpauthUrl"))
		p.Error = res.message()
		c.render(w, r, statusOf(res), "security", p)
		return
	}
	c.withCodes(w, r, res, "The authenticator app is on.")
}

// withCodes shows the security page with the recovery codes an answer
// carries, if any.
func (c *Console) withCodes(w http.ResponseWriter, r *http.Request, res result, done string) {
	var out struct {
		RecoveryCodes []string `json:"recoveryCodes"`
	}
	_ = res.decode(&out)
	p, d, ok := c.securityState(w, r)
	if !ok {
		return
	}
	p.Flash, d.Codes = done, out.RecoveryCodes
	c.render(w, r, http.StatusOK, "security", p)
}

// emailStart mails the code that turns email codes on (POST …/mfa/email).
func (c *Console) emailStart(w http.ResponseWriter, r *http.Request) {
	res := c.send(r, http.MethodPost, "/api/auth/mfa/email", map[string]any{})
	c.securityResult(w, r, res, func(d *securityData) { d.EmailStarted = true })
}

func (c *Console) emailConfirm(w http.ResponseWriter, r *http.Request) {
	res := c.send(r, http.MethodPost, "/api/auth/mfa/email/confirm", map[string]string{"code": strings.TrimSpace(r.PostFormValue("code"))})
	if !res.ok() {
		c.securityResult(w, r, res, nil)
		return
	}
	c.withCodes(w, r, res, "Email codes are on.")
}

// recoveryCodes issues new recovery codes (password needed).
func (c *Console) recoveryCodes(w http.ResponseWriter, r *http.Request) {
	res := c.send(r, http.MethodPost, "/api/auth/mfa/recovery-codes", map[string]string{"password": r.PostFormValue("password")})
	if !res.ok() {
		c.securityResult(w, r, res, nil)
		return
	}
	c.withCodes(w, r, res, "New recovery codes: the old ones no longer work.")
}

// factorOff turns a factor off with the password (DELETE with a body).
func (c *Console) factorOff(apiPath, done string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		res := c.send(r, http.MethodDelete, apiPath, map[string]string{"password": r.PostFormValue("password")})
		if !res.ok() {
			c.securityResult(w, r, res, nil)
			return
		}
		redirect(w, r, Prefix+"/security", done)
	}
}

func (c *Console) securityDelete(apiPath, done string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		res := c.send(r, http.MethodDelete, apiPath, nil)
		if !res.ok() {
			c.securityResult(w, r, res, nil)
			return
		}
		redirect(w, r, Prefix+"/security", done)
	}
}

func (c *Console) securityDeleteID(apiPrefix, done string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		res := c.send(r, http.MethodDelete, apiPrefix+url.PathEscape(r.PathValue("id")), nil)
		if !res.ok() {
			c.securityResult(w, r, res, nil)
			return
		}
		if res.Header.Get("Set-Cookie") != "" {
			passCookies(w, res)
		}
		redirect(w, r, Prefix+"/security", done)
	}
}
