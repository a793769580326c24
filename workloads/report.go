package workloads

import (
	"fmt"
	"os"
	"path/filepath"
)

// ReportFormat is HiBench's format of a report line (and of the header).
const ReportFormat = "%-12s %-10s %-8s %-20s %-20s %-20s %-20s\n"

// ReportHeader is the first line of a report file, HiBench's.
func ReportHeader() string {
	return fmt.Sprintf(ReportFormat, "Type", "Date", "Time", "Input_data_size", "Duration(s)", "Throughput(bytes/s)", "Throughput/node")
}

// FormatReportLine formats m as HiBench does: the date and time of the
// end, the input bytes, the duration in seconds with 3 decimals, the
// throughput (input bytes / duration, whole bytes per second) and the
// throughput per TaskTracker.
func FormatReportLine(m Measurement) string {
	secs := m.Duration.Seconds()
	var tput int64
	if secs > 0 {
		tput = int64(float64(m.Bytes) / secs)
	}
	nodes := int64(max(m.Trackers, 1))
	return fmt.Sprintf(ReportFormat, m.Type, m.End.Format("2006-01-02"), m.End.Format("15:04:05"),
		fmt.Sprint(m.Bytes), seconds(m.Duration), fmt.Sprint(tput), fmt.Sprint(tput/nodes))
}

// AppendReport appends the lines of ms to the report file at path, writing
// the header first if the file is new.
func AppendReport(path string, ms []Measurement) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return fmt.Errorf("report: %w", err)
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
	if err != nil {
		return fmt.Errorf("report: %w", err)
	}
	st, err := f.Stat()
	if err == nil && st.Size() == 0 {
		_, err = f.WriteString(ReportHeader())
	}
	for _, m := range ms {
		if err == nil {
			_, err = f.WriteString(FormatReportLine(m))
		}
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("report %s: %w", path, err)
	}
	return nil
}
