package security

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"slices"
	"time"
)

// File names of the cluster CA in its directory.
const (
	CACertFile = "ca.pem"
	CAKeyFile  = "ca-key.pem"
)

// CertFiles are the names of the certificate and key files of name:
// NAME.pem and NAME-key.pem.
func CertFiles(name string) (cert, key string) { return name + ".pem", name + "-key.pem" }

// CA is a cluster certificate authority: its certificate and key.
type CA struct {
	Cert *x509.Certificate
	Key  *ecdsa.PrivateKey
}

// NewCA makes a CA (ECDSA P-256, self-signed) named name, valid for
// validity from now.
func NewCA(name string, validity time.Duration) (*CA, error) {
	if name == "" {
		return nil, errors.New("CA name is empty")
	}
	if validity <= 0 {
		return nil, fmt.Errorf("CA validity %v: must be positive", validity)
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	serial, err := newSerial()
	if err != nil {
		return nil, err
	}
	now := time.Now()
	tmpl := &x509.Certificate{
		SerialNumber:          serial,
		Subject:               pkix.Name{CommonName: name, Organization: []string{"gomr"}},
		NotBefore:             now.Add(-5 * time.Minute),
		NotAfter:              now.Add(validity),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageCRLSign | x509.KeyUsageDigitalSignature,
		BasicConstraintsValid: true,
		IsCA:                  true,
		MaxPathLenZero:        true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return nil, fmt.Errorf("creating the CA certificate: %w", err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, err
	}
	return &CA{Cert: cert, Key: key}, nil
}

// IssueOptions describe a certificate to issue.
type IssueOptions struct {
	// Role is RoleJobTracker, RoleTaskTracker or RoleUser.
	Role string
	// Name is the Subject CommonName: the user, the tracker's name (as
	// the tracker registers, its --name), the JobTracker's name.
	Name string
	// Hosts become the DNS and IP subject alternative names: the names
	// and addresses others dial this server at. Required for the
	// jobtracker and tasktracker roles, refused for users.
	Hosts []string
	// Groups are a user's groups (Subject Organization), which job ACLs
	// and mapreduce.cluster.administrators may name. Users only.
	Groups []string
	// Validity is how long the certificate is valid from now.
	Validity time.Duration
}

// Issue makes a key (ECDSA P-256) and a certificate for it signed by the
// CA, and returns both PEM-encoded (the key as PKCS #8).
func (ca *CA) Issue(o IssueOptions) (certPEM, keyPEM []byte, err error) {
	if !slices.Contains(Roles(), o.Role) {
		return nil, nil, fmt.Errorf("role %q: want one of %v", o.Role, Roles())
	}
	if err := checkName("name", o.Name); err != nil {
		return nil, nil, err
	}
	if o.Validity <= 0 {
		return nil, nil, fmt.Errorf("validity %v: must be positive", o.Validity)
	}
	tmpl := &x509.Certificate{
		Subject:     pkix.Name{CommonName: o.Name, OrganizationalUnit: []string{o.Role}},
		KeyUsage:    x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	}
	switch o.Role {
	case RoleUser:
		if len(o.Hosts) > 0 {
			return nil, nil, errors.New("a user certificate is a client certificate: it takes no hosts")
		}
		for _, g := range o.Groups {
			if err := checkName("group", g); err != nil {
				return nil, nil, err
			}
		}
		tmpl.Subject.Organization = slices.Clone(o.Groups)
	default:
		if len(o.Groups) > 0 {
			return nil, nil, fmt.Errorf("groups are for user certificates, not %s ones", o.Role)
		}
		if len(o.Hosts) == 0 {
			return nil, nil, fmt.Errorf("a %s certificate is a server certificate: give the host names and addresses it is reached at (--hosts)", o.Role)
		}
		// Daemons serve (the JobTracker's RPC, the trackers' shuffle)
		// and dial (trackers and their children fetch from trackers).
		tmpl.ExtKeyUsage = append(tmpl.ExtKeyUsage, x509.ExtKeyUsageServerAuth)
		for _, h := range o.Hosts {
			if h == "" {
				return nil, nil, errors.New("empty host name in the hosts")
			}
			if ip := net.ParseIP(h); ip != nil {
				tmpl.IPAddresses = append(tmpl.IPAddresses, ip)
			} else {
				tmpl.DNSNames = append(tmpl.DNSNames, h)
			}
		}
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, nil, err
	}
	if tmpl.SerialNumber, err = newSerial(); err != nil {
		return nil, nil, err
	}
	now := time.Now()
	tmpl.NotBefore, tmpl.NotAfter = now.Add(-5*time.Minute), now.Add(o.Validity)
	if tmpl.NotAfter.After(ca.Cert.NotAfter) {
		tmpl.NotAfter = ca.Cert.NotAfter
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.Cert, &key.PublicKey, ca.Key)
	if err != nil {
		return nil, nil, fmt.Errorf("signing the certificate: %w", err)
	}
	keyPEM, err = encodeKey(key)
	if err != nil {
		return nil, nil, err
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), keyPEM, nil
}

func newSerial() (*big.Int, error) {
	return rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 128))
}

func encodeKey(key *ecdsa.PrivateKey) ([]byte, error) {
	der, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return nil, err
	}
	return pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der}), nil
}

// CertPEM is the CA certificate, PEM-encoded.
func (ca *CA) CertPEM() []byte {
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: ca.Cert.Raw})
}

// WriteCA makes a CA and writes it to dir as ca.pem and ca-key.pem (the
// key readable by its owner only). It refuses to replace existing files
// unless force is set: a new CA invalidates every certificate of the old.
func WriteCA(dir, name string, validity time.Duration, force bool) (*CA, error) {
	ca, err := NewCA(name, validity)
	if err != nil {
		return nil, err
	}
	keyPEM, err := encodeKey(ca.Key)
	if err != nil {
		return nil, err
	}
	if err := writePair(dir, CACertFile, ca.CertPEM(), CAKeyFile, keyPEM, force); err != nil {
		return nil, err
	}
	return ca, nil
}

// LoadCA reads the CA that WriteCA wrote to dir.
func LoadCA(dir string) (*CA, error) {
	cert, err := readCert(filepath.Join(dir, CACertFile))
	if err != nil {
		return nil, err
	}
	if !cert.IsCA {
		return nil, fmt.Errorf("%s is not a CA certificate", filepath.Join(dir, CACertFile))
	}
	keyPath := filepath.Join(dir, CAKeyFile)
	data, err := os.ReadFile(keyPath)
	if err != nil {
		return nil, fmt.Errorf("CA key: %w", err)
	}
	block, _ := pem.Decode(data)
	if block == nil {
		return nil, fmt.Errorf("%s holds no PEM key", keyPath)
	}
	k, err := x509.ParsePKCS8PrivateKey(block.Bytes)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", keyPath, err)
	}
	key, ok := k.(*ecdsa.PrivateKey)
	if !ok || !key.PublicKey.Equal(cert.PublicKey) {
		return nil, fmt.Errorf("%s is not the key of %s", keyPath, filepath.Join(dir, CACertFile))
	}
	return &CA{Cert: cert, Key: key}, nil
}

// IssueFiles issues a certificate with the CA in caDir and writes it to
// outDir as NAME.pem and NAME-key.pem (the key readable by its owner
// only), refusing to replace existing files unless force is set. It
// returns the paths written.
func IssueFiles(caDir, outDir string, o IssueOptions, force bool) (certPath, keyPath string, err error) {
	if err := checkName("name", o.Name); err != nil {
		return "", "", err
	}
	ca, err := LoadCA(caDir)
	if err != nil {
		return "", "", err
	}
	certPEM, keyPEM, err := ca.Issue(o)
	if err != nil {
		return "", "", err
	}
	certName, keyName := CertFiles(o.Name)
	for _, f := range []string{certName, keyName} {
		if same, _ := sameFile(filepath.Join(outDir, f), filepath.Join(caDir, CACertFile), filepath.Join(caDir, CAKeyFile)); same {
			return "", "", fmt.Errorf("the name %q would overwrite the CA's own files in %s", o.Name, caDir)
		}
	}
	if err := writePair(outDir, certName, certPEM, keyName, keyPEM, force); err != nil {
		return "", "", err
	}
	return filepath.Join(outDir, certName), filepath.Join(outDir, keyName), nil
}

func sameFile(p string, others ...string) (bool, error) {
	a, err := filepath.Abs(p)
	if err != nil {
		return false, err
	}
	for _, o := range others {
		b, err := filepath.Abs(o)
		if err == nil && a == b {
			return true, nil
		}
	}
	return false, nil
}

// writePair writes a certificate (0644) and its key (0600) into dir.
func writePair(dir, certName string, certPEM []byte, keyName string, keyPEM []byte, force bool) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	certPath, keyPath := filepath.Join(dir, certName), filepath.Join(dir, keyName)
	if !force {
		for _, p := range []string{certPath, keyPath} {
			if _, err := os.Lstat(p); err == nil {
				return fmt.Errorf("%s exists (give --force to replace it)", p)
			}
		}
	}
	if err := writeFile(keyPath, keyPEM, 0o600); err != nil {
		return err
	}
	return writeFile(certPath, certPEM, 0o644)
}

// writeFile writes data through a temporary file renamed into place, so
// that the final file never has looser permissions than perm.
func writeFile(path string, data []byte, perm os.FileMode) error {
	f, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".tmp*")
	if err != nil {
		return err
	}
	defer os.Remove(f.Name())
	if err := f.Chmod(perm); err != nil {
		f.Close()
		return err
	}
	if _, err := f.Write(data); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	return os.Rename(f.Name(), path)
}

// readCert reads the first certificate of a PEM file.
func readCert(path string) (*x509.Certificate, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	for {
		var block *pem.Block
		block, data = pem.Decode(data)
		if block == nil {
			return nil, fmt.Errorf("%s holds no PEM certificate", path)
		}
		if block.Type == "CERTIFICATE" {
			c, err := x509.ParseCertificate(block.Bytes)
			if err != nil {
				return nil, fmt.Errorf("%s: %w", path, err)
			}
			return c, nil
		}
	}
}

// Describe summarizes a certificate file for mr certs show: identity,
// hosts, issuer and validity.
func Describe(path string) (string, error) {
	c, err := readCert(path)
	if err != nil {
		return "", err
	}
	id := IdentityOf(c)
	s := fmt.Sprintf("%s\n  name:    %s\n  role:    %s\n", path, id.Name, orNone(id.Role))
	if c.IsCA {
		s = fmt.Sprintf("%s\n  CA:      %s\n", path, c.Subject.CommonName)
	}
	if len(id.Groups) > 0 {
		s += fmt.Sprintf("  groups:  %v\n", id.Groups)
	}
	var hosts []string
	hosts = append(hosts, c.DNSNames...)
	for _, ip := range c.IPAddresses {
		hosts = append(hosts, ip.String())
	}
	if len(hosts) > 0 {
		s += fmt.Sprintf("  hosts:   %v\n", hosts)
	}
	s += fmt.Sprintf("  issuer:  %s\n  valid:   %s to %s\n", c.Issuer.CommonName,
		c.NotBefore.UTC().Format(time.RFC3339), c.NotAfter.UTC().Format(time.RFC3339))
	return s, nil
}

func orNone(s string) string {
	if s == "" {
		return "(none: not a gomr certificate)"
	}
	return s
}
