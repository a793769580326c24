package mr

import "testing"

func TestRawOutput(t *testing.T) {
	tests := []struct {
		name string
		recs [][2]string
		want string
	}{
		{"key then value", [][2]string{{"0123456789", "payload\r\n"}, {"k", "v"}}, "0123456789payload\r\nkv"},
		{"empty parts", [][2]string{{"", "v"}, {"k", ""}, {"", ""}}, "vk"},
		{"no records", nil, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := writeRecords(t, RawOutput{}, tt.recs); got != tt.want {
				t.Errorf("wrote %q, want %q", got, tt.want)
			}
		})
	}
}
