// Package security is the cluster's authentication and authorization: a
// cluster CA and the certificates it issues (mr certs), the TLS
// configurations of the JobTracker, the TaskTrackers, their children and
// the clients (mutual TLS, see docs/security.md), the identity a
// certificate carries, and Hadoop's access control lists.
//
// A certificate's identity is its Subject: the CommonName is the name (a
// user name, a tracker name, the JobTracker's name), the single
// OrganizationalUnit that is one of the roles "jobtracker", "tasktracker"
// or "user" is the role, and for user certificates the Organization
// values are the user's groups (the groups job ACLs name).
package security

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"slices"
	"strings"
)

// The roles a certificate can carry (its Subject OrganizationalUnit).
const (
	// RoleJobTracker is the JobTracker's (a server certificate).
	RoleJobTracker = "jobtracker"
	// RoleTaskTracker is a TaskTracker's and its task children's (a
	// server and client certificate); the name is the tracker's name.
	RoleTaskTracker = "tasktracker"
	// RoleUser is a user's (a client certificate); the name is the user
	// name, the Organization values are the user's groups.
	RoleUser = "user"
)

// Roles lists the roles.
func Roles() []string { return []string{RoleJobTracker, RoleTaskTracker, RoleUser} }

// Identity is who a certificate says its holder is.
type Identity struct {
	// Name is the Subject CommonName.
	Name string
	// Role is one of the roles, or "" when the certificate carries none
	// (or more than one).
	Role string
	// Groups are a user certificate's Subject Organization values.
	Groups []string
}

// String names the identity for messages: "user alice", "tasktracker t1".
func (id Identity) String() string {
	if id.Role == "" {
		return fmt.Sprintf("%q (a certificate with no gomr role)", id.Name)
	}
	return id.Role + " " + id.Name
}

// IdentityOf reads the identity of a certificate. It does not verify the
// certificate: only call it on one that a TLS handshake (or
// x509.Certificate.Verify) checked against the cluster CA.
func IdentityOf(cert *x509.Certificate) Identity {
	id := Identity{Name: cert.Subject.CommonName}
	for _, ou := range cert.Subject.OrganizationalUnit {
		if !slices.Contains(Roles(), ou) {
			continue
		}
		if id.Role != "" && id.Role != ou {
			id.Role = "" // two roles: none
			break
		}
		id.Role = ou
	}
	if id.Role == RoleUser {
		id.Groups = append([]string(nil), cert.Subject.Organization...)
	}
	return id
}

// PeerIdentity is the identity of the peer of a TLS connection whose
// certificate the handshake verified against the cluster CA (a server
// configured by Config.Server). It fails when there is none: no TLS, or no
// verified client certificate.
func PeerIdentity(cs *tls.ConnectionState) (Identity, error) {
	if cs == nil {
		return Identity{}, errors.New("the connection does not use TLS")
	}
	if len(cs.VerifiedChains) == 0 || len(cs.VerifiedChains[0]) == 0 {
		return Identity{}, errors.New("the peer presented no certificate verified by the cluster CA")
	}
	return IdentityOf(cs.VerifiedChains[0][0]), nil
}

// checkName refuses names and groups that would not survive an ACL
// ("user1,user2 group1,group2": commas and white space separate) or a
// file name (NAME.pem).
func checkName(what, s string) error {
	switch {
	case s == "":
		return fmt.Errorf("%s is empty", what)
	case s == "." || s == "..":
		return fmt.Errorf("%s %q is not a usable name", what, s)
	case strings.ContainsAny(s, ",/\\\x00") || strings.IndexFunc(s, isSpace) >= 0:
		return fmt.Errorf("%s %q: names may not hold commas, slashes or white space (ACLs separate users and groups with them)", what, s)
	case strings.HasPrefix(s, "-"):
		return fmt.Errorf("%s %q may not start with '-'", what, s)
	}
	return nil
}

func isSpace(r rune) bool {
	return r == ' ' || r == '\t' || r == '\n' || r == '\r' || r == '\v' || r == '\f' || r == 0x85 || r == 0xA0
}
