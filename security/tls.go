package security

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"gomr/conf"
)

// Configuration keys of this package (declared in conf/keys.go).
const (
	KeyTLSEnabled   = "mapreduce.cluster.tls.enabled"
	KeyTLSCA        = "mapreduce.cluster.tls.ca"
	KeyTLSCert      = "mapreduce.cluster.tls.cert"
	KeyTLSKey       = "mapreduce.cluster.tls.key"
	KeyACLsEnabled  = "mapreduce.cluster.acls.enabled"
	KeyAdmins       = "mapreduce.cluster.administrators"
	KeyJobViewACL   = "mapreduce.job.acl-view-job"
	KeyJobModifyACL = "mapreduce.job.acl-modify-job"
)

// TLS is a process's TLS material: the cluster CA and its own certificate
// and key, loaded once at start-up. A nil *TLS means TLS is off.
type TLS struct {
	pool *x509.CertPool
	cert tls.Certificate
	leaf *x509.Certificate
	id   Identity
	// Absolute paths of the files, for task children (ChildConf).
	caPath, certPath, keyPath string
}

// Load reads the TLS material that cfg names. With
// mapreduce.cluster.tls.enabled false it returns nil, nil. Otherwise the
// CA, certificate and key must all be given and readable, the key must be
// the certificate's, and the certificate must be valid now, chain to the
// CA and carry a role; errors name the key at fault.
func Load(cfg *conf.Config) (*TLS, error) {
	if !cfg.Bool(KeyTLSEnabled) {
		return nil, nil
	}
	t := &TLS{}
	paths := []*string{&t.caPath, &t.certPath, &t.keyPath}
	for i, key := range []string{KeyTLSCA, KeyTLSCert, KeyTLSKey} {
		p := cfg.String(key)
		if p == "" {
			return nil, fmt.Errorf("%s is true but %s is empty: give the cluster CA certificate, this process's certificate and its key (mr certs; see docs/security.md)", KeyTLSEnabled, key)
		}
		abs, err := filepath.Abs(p)
		if err != nil {
			return nil, fmt.Errorf("%s %s: %w", key, p, err)
		}
		*paths[i] = abs
	}
	caPEM, err := os.ReadFile(t.caPath)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", KeyTLSCA, err)
	}
	t.pool = x509.NewCertPool()
	if !t.pool.AppendCertsFromPEM(caPEM) {
		return nil, fmt.Errorf("%s: %s holds no PEM certificate", KeyTLSCA, t.caPath)
	}
	t.cert, err = tls.LoadX509KeyPair(t.certPath, t.keyPath)
	if err != nil {
		return nil, fmt.Errorf("%s and %s: %w", KeyTLSCert, KeyTLSKey, err)
	}
	t.leaf = t.cert.Leaf
	if t.leaf == nil {
		if t.leaf, err = x509.ParseCertificate(t.cert.Certificate[0]); err != nil {
			return nil, fmt.Errorf("%s: %w", KeyTLSCert, err)
		}
	}
	if _, err := t.leaf.Verify(x509.VerifyOptions{Roots: t.pool, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}); err != nil {
		return nil, fmt.Errorf("%s %s is not a valid client certificate of the cluster CA %s: %w", KeyTLSCert, t.certPath, t.caPath, err)
	}
	t.id = IdentityOf(t.leaf)
	if t.id.Role == "" {
		return nil, fmt.Errorf("%s %s carries no gomr role (Subject OU jobtracker, tasktracker or user): issue it with mr certs issue --role", KeyTLSCert, t.certPath)
	}
	return t, nil
}

// Identity is the identity of this process's own certificate.
func (t *TLS) Identity() Identity { return t.id }

// CertPath is the absolute path of this process's certificate.
func (t *TLS) CertPath() string { return t.certPath }

// CheckHost tells whether this process's certificate is valid for host
// (a name or an IP address), as a peer dialing host checks it.
func (t *TLS) CheckHost(host string) error {
	if err := t.leaf.VerifyHostname(host); err != nil {
		return fmt.Errorf("%s %s is not valid for %s, the address it is reached at: %w (reissue it with mr certs issue --hosts naming it)", KeyTLSCert, t.certPath, host, err)
	}
	return nil
}

// Server is the TLS configuration of a server of the cluster: it presents
// this process's certificate and requires a client certificate verified
// against the cluster CA (tls.RequireAndVerifyClientCert). What the
// client's role may do is the server's business (PeerIdentity).
func (t *TLS) Server() *tls.Config {
	return &tls.Config{
		MinVersion:   tls.VersionTLS13,
		Certificates: []tls.Certificate{t.cert},
		ClientAuth:   tls.RequireAndVerifyClientCert,
		ClientCAs:    t.pool,
	}
}

// Client is the TLS configuration for dialing a server of the cluster
// whose certificate must carry serverRole: it presents this process's
// certificate, verifies the server's against the cluster CA and the
// dialed host name, and refuses a server of another role (a tracker's
// certificate cannot pass for the JobTracker's).
func (t *TLS) Client(serverRole string) *tls.Config {
	return &tls.Config{
		MinVersion:   tls.VersionTLS13,
		Certificates: []tls.Certificate{t.cert},
		RootCAs:      t.pool,
		VerifyConnection: func(cs tls.ConnectionState) error {
			if len(cs.PeerCertificates) == 0 {
				return errors.New("the server presented no certificate")
			}
			if id := IdentityOf(cs.PeerCertificates[0]); id.Role != serverRole {
				return fmt.Errorf("server %s presents the certificate of %s, not of a %s", cs.ServerName, id, serverRole)
			}
			return nil
		},
	}
}

// ChildConf is the configuration a TaskTracker gives its task children
// over the job's: its own TLS settings (children fetch map output from
// other trackers as the tracker, with its certificate), with absolute
// paths since children run in their attempt directories. With TLS off
// (t nil) it turns TLS off, so that a child never uses the paths the
// JobTracker's own configuration carries.
func ChildConf(t *TLS) map[string]string {
	if t == nil {
		return map[string]string{KeyTLSEnabled: "false", KeyTLSCA: "", KeyTLSCert: "", KeyTLSKey: ""}
	}
	return map[string]string{KeyTLSEnabled: "true", KeyTLSCA: t.caPath, KeyTLSCert: t.certPath, KeyTLSKey: t.keyPath}
}

// RequireRole serves h only to clients whose certificate (verified by the
// TLS handshake, see Server) carries role; others get 403 naming who they
// are. A request that did not come over TLS gets 403 too.
func RequireRole(role string, h http.Handler) http.Handler {
	return RequireAnyRole(h, role)
}

// RequireAnyRole is RequireRole for clients of any of roles.
func RequireAnyRole(h http.Handler, roles ...string) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		id, err := PeerIdentity(r.TLS)
		if err != nil {
			http.Error(w, "forbidden: "+err.Error(), http.StatusForbidden)
			return
		}
		if !slices.Contains(roles, id.Role) {
			http.Error(w, fmt.Sprintf("forbidden: %s may not call %s; it needs a %s certificate", id, r.URL.Path, strings.Join(roles, " or ")),
				http.StatusForbidden)
			return
		}
		h.ServeHTTP(w, r)
	})
}

// Transport returns a transport that dials the cluster's HTTP servers
// (TaskTracker shuffle servers, whose certificates carry the tasktracker
// role) over TLS with this process's certificate: a copy of base (nil:
// http.DefaultTransport) with the TLS configuration, through which a
// request for an http:// URL is sent as https:// (the fetchers build
// http:// URLs; with TLS on, the servers speak nothing else).
func (t *TLS) Transport(base *http.Transport) http.RoundTripper {
	if base == nil {
		base = http.DefaultTransport.(*http.Transport)
	}
	tr := base.Clone()
	tr.TLSClientConfig = t.Client(RoleTaskTracker)
	return upgrade{tr}
}

type upgrade struct{ rt *http.Transport }

// CloseIdleConnections closes the transport's idle connections (as
// http.Client.CloseIdleConnections asks).
func (u upgrade) CloseIdleConnections() { u.rt.CloseIdleConnections() }

func (u upgrade) RoundTrip(r *http.Request) (*http.Response, error) {
	if r.URL.Scheme == "http" {
		r2 := r.Clone(r.Context())
		r2.URL.Scheme = "https"
		return u.rt.RoundTrip(r2)
	}
	return u.rt.RoundTrip(r)
}

// ClusterTransport is rt as it must be to reach the cluster's HTTP
// servers under cfg: unchanged with TLS off, otherwise the TLS transport
// built from it (rt must then be an *http.Transport or nil).
func ClusterTransport(cfg *conf.Config, rt http.RoundTripper) (http.RoundTripper, error) {
	t, err := Load(cfg)
	if err != nil || t == nil {
		return rt, err
	}
	var base *http.Transport
	if rt != nil {
		var ok bool
		if base, ok = rt.(*http.Transport); !ok {
			return nil, fmt.Errorf("cannot add TLS to an HTTP transport of type %T", rt)
		}
	}
	return t.Transport(base), nil
}

// Listener wraps l so that connections to it speak TLS as a cluster
// server (Server).
func (t *TLS) Listener(l net.Listener) net.Listener { return tls.NewListener(l, t.Server()) }

// Describe is a one-line summary for start-up logs.
func (t *TLS) Describe() string {
	if t == nil {
		return "off"
	}
	return t.id.String() + " (" + t.certPath + ", expires " + t.leaf.NotAfter.UTC().Format(time.DateOnly) + ", " +
		strconv.Itoa(int(time.Until(t.leaf.NotAfter).Hours()/24)) + " days)"
}
