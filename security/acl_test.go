package security

import (
	"slices"
	"strings"
	"testing"
)

func TestACLParse(t *testing.T) {
	tests := []struct {
		in            string
		all           bool
		users, groups []string
	}{
		{in: ""},
		{in: " "},
		{in: "*", all: true},
		{in: "  * ", all: true},
		{in: "alice", users: []string{"alice"}},
		{in: "alice,bob", users: []string{"alice", "bob"}},
		{in: "alice,bob eng,ops", users: []string{"alice", "bob"}, groups: []string{"eng", "ops"}},
		{in: " eng", groups: []string{"eng"}},
		{in: ",alice,,alice, ", users: []string{"alice"}},
		// Hadoop's rule: the first space ends the users.
		{in: "alice, bob", users: []string{"alice"}, groups: []string{"bob"}},
		{in: "alice eng ops", users: []string{"alice"}, groups: []string{"eng ops"}},
		// "*" only counts alone.
		{in: "*,alice", users: []string{"*", "alice"}},
	}
	for _, tt := range tests {
		a := ParseACL(tt.in)
		if a.AllowsAll() != tt.all || !slices.Equal(a.Users(), tt.users) || !slices.Equal(a.Groups(), tt.groups) {
			t.Errorf("ParseACL(%q) = all %v users %q groups %q; want all %v users %q groups %q",
				tt.in, a.AllowsAll(), a.Users(), a.Groups(), tt.all, tt.users, tt.groups)
		}
		if a.String() != tt.in {
			t.Errorf("ParseACL(%q).String() = %q", tt.in, a.String())
		}
	}
}

func TestACLAllows(t *testing.T) {
	alice := Identity{Name: "alice", Role: RoleUser, Groups: []string{"eng"}}
	bob := Identity{Name: "bob", Role: RoleUser}
	tests := []struct {
		acl  string
		id   Identity
		want bool
	}{
		{"", alice, false},
		{" ", alice, false},
		{"*", bob, true},
		{"alice", alice, true},
		{"alice", bob, false},
		{"carol,alice", alice, true},
		{" eng", alice, true},
		{" eng", bob, false},
		{"bob eng", alice, true},
		{"eng", alice, false}, // a user named eng, not the group
		{"*,alice", bob, false},
	}
	for _, tt := range tests {
		if got := ParseACL(tt.acl).Allows(tt.id); got != tt.want {
			t.Errorf("ACL %q allows %s = %v, want %v", tt.acl, tt.id, got, tt.want)
		}
	}
}

func TestACLJobAccessDecision(t *testing.T) {
	alice := Identity{Name: "alice", Role: RoleUser}
	bob := Identity{Name: "bob", Role: RoleUser}
	carol := Identity{Name: "carol", Role: RoleUser, Groups: []string{"ops"}}
	root := Identity{Name: "root", Role: RoleUser, Groups: []string{"admin"}}
	tests := []struct {
		name   string
		id     Identity
		op     JobOp
		owner  string
		admins string
		acl    string
		want   bool
	}{
		{"owner", alice, ModifyJob, "alice", "", "", true},
		{"other user, empty ACL", bob, ModifyJob, "alice", "", "", false},
		{"other user, blank ACL (Hadoop default)", bob, ViewJob, "alice", " ", " ", false},
		{"other user named in ACL", bob, ViewJob, "alice", "", "bob", true},
		{"other user, wildcard", bob, ModifyJob, "alice", "", "*", true},
		{"group in ACL", carol, ModifyJob, "alice", "", " ops", true},
		{"administrator by name", root, ModifyJob, "alice", "root", "", true},
		{"administrator by group", root, ViewJob, "alice", " admin", "", true},
		{"administrators wildcard", bob, ModifyJob, "alice", "*", "", true},
		{"no owner recorded is nobody's", alice, ViewJob, "", "", "", false},
		{"an empty name owns nothing", Identity{Role: RoleUser}, ViewJob, "", "", "", false},
	}
	for _, tt := range tests {
		err := CheckJobAccess(tt.id, tt.op, "job_1_0001", tt.owner, ParseACL(tt.admins), ParseACL(tt.acl))
		if (err == nil) != tt.want {
			t.Errorf("%s: CheckJobAccess = %v, want allowed %v", tt.name, err, tt.want)
			continue
		}
		if err != nil {
			for _, s := range []string{"user " + tt.id.Name, "job_1_0001", tt.op.Key, tt.op.Verb, KeyAdmins} {
				if !strings.Contains(err.Error(), s) {
					t.Errorf("%s: refusal %q does not name %q", tt.name, err, s)
				}
			}
		}
	}
}
