package ctl

import (
	"context"
	"errors"
	"net/http"
	"net/url"
	"time"
)

// Upgrader is what a backend implements to serve the upgrade and version
// verbs: supervise re-executing its own binary in place.
type Upgrader interface {
	// Upgrade checks the new binary and freezes everything for the hand
	// over; its error says why nothing changed. commit, called once the
	// reply has been sent, execs the new binary (it returns only when that
	// failed, everything then back as it was).
	Upgrade(ctx context.Context) (started UpgradeStarted, commit func(), err error)
	// Version reports the running binary and the upgrades so far.
	Version(ctx context.Context) (VersionInfo, error)
}

// UpgradeStarted is the reply to upgrade: the binary is about to be
// replaced. The client then asks version until Generation is reported.
type UpgradeStarted struct {
	From       string `json:"from"`
	Pid        int    `json:"pid"`
	Generation int    `json:"generation"`
}

// VersionInfo is the reply to version.
type VersionInfo struct {
	Version  string          `json:"version"`
	Pid      int             `json:"pid"`
	Exe      string          `json:"exe"`
	Upgrades []UpgradeRecord `json:"upgrades,omitempty"`
}

// UpgradeRecord is one upgrade tried: from and to which version, and the
// error that kept the old binary, if any. After a take-over the new
// binary reloads the config file: Reloaded says what that changed, or
// ReloadError why the running config stayed.
type UpgradeRecord struct {
	Generation  int       `json:"generation"`
	From        string    `json:"from"`
	To          string    `json:"to,omitempty"`
	At          time.Time `json:"at"`
	Error       string    `json:"error,omitempty"`
	Reloaded    string    `json:"reloaded,omitempty"`
	ReloadError string    `json:"reload_error,omitempty"`
}

var errNoUpgrade = errors.New("this supervisor cannot upgrade itself")

func upgrader(b Backend) (Upgrader, error) {
	u, ok := b.(Upgrader)
	if !ok {
		return nil, errNoUpgrade
	}
	return u, nil
}

func serveUpgrade(s *Server, ctx context.Context, w http.ResponseWriter, _ *noArgs) error {
	u, err := upgrader(s.cfg.Backend)
	if err != nil {
		return err
	}
	started, commit, err := u.Upgrade(ctx)
	if err != nil {
		return err
	}
	// The reply goes out whole (its length is set) before the exec closes
	// the connection.
	s.writeJSON(w, http.StatusOK, started)
	_ = http.NewResponseController(w).Flush()
	commit()
	return nil
}

func serveVersion(s *Server, ctx context.Context, w http.ResponseWriter, _ *versionArgs) error {
	u, err := upgrader(s.cfg.Backend)
	if err != nil {
		return err
	}
	v, err := u.Version(ctx)
	if err == nil {
		s.writeJSON(w, http.StatusOK, v)
	}
	return err
}

// upgrade: POST /v1/upgrade with no body. version: GET /v1/version.

type versionArgs struct{ noNames }

func (a *versionArgs) fromQuery(url.Values) *apiError { return nil }

func (a *versionArgs) query() url.Values { return url.Values{} }

// Upgrade asks supervise to re-execute its binary in place; it returns
// once the new binary is about to take over (see Version for the outcome).
func (c *Client) Upgrade(ctx context.Context) (UpgradeStarted, error) {
	var st UpgradeStarted
	err := c.call(ctx, "upgrade", &noArgs{}, &st)
	return st, err
}

// Version reports the running binary and its upgrades.
func (c *Client) Version(ctx context.Context) (VersionInfo, error) {
	var v VersionInfo
	err := c.call(ctx, "version", &versionArgs{}, &v)
	return v, err
}
