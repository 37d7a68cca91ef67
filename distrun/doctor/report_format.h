#pragma once

#include <iosfwd>
#include <string>
#include <vector>

#include "distrun/doctor/check_result.h"

namespace distrun::doctor {

// The report as people read it: one row per check with the nodes in each
// state folded into hostlists (`nid[005252-005254]`), then one line per
// distinct failure and warning naming its nodes, what is wrong and the fix,
// then the skip reasons. Stays one screen (under 50 lines of at most 100
// columns) for any number of nodes as long as the distinct results are
// few: long node lists are cut with a count, and a check with many
// different details per node shows the first few and how many more.
void writeTable(std::ostream& out, const DoctorReport& report);

// The report as scripts read it: one JSON document, schema in
// docs/doctor.md ("schema": "distrun-doctor/1"). Text that is not UTF-8 is
// written with U+FFFD in place of the bad bytes.
void writeJson(std::ostream& out, const DoctorReport& report);

// The report in the form of LBNL Node Health Check, which Slurm's
// HealthCheckProgram runs: for each failed check of each node a line
// `ERROR:  nhc:  Health check failed:  NODE: CHECK: DETAIL`, and for each
// failing node a `scontrol update NodeName=NODE State=DRAIN Reason="..."`
// line an admin can run. Nothing for a healthy job.
void writeNhc(std::ostream& out, const DoctorReport& report);

// writeTable, writeJson or writeNhc by --format's value ("table", "json",
// "nhc"); UsageError for another.
void writeReport(std::ostream& out, const DoctorReport& report, const std::string& format);

// How one node's results travel to rank 0 through the store: JSON text.
// parseNodeReport throws DataError naming `from` (a node) when the text is
// not a node report.
std::string nodeReportText(const NodeReport& report);
NodeReport parseNodeReport(const std::string& text, const std::string& from);

// The checks of `report` in print order: report.checks, then any check a
// node answered that it does not list.
std::vector<std::string> reportedChecks(const DoctorReport& report);

// The worst state of `check` on any node; kSkip when no node ran it.
CheckState checkState(const DoctorReport& report, const std::string& check);

// `text` with every control character (newline, tab, ...) made a blank: a
// detail or fix as the one line that the table and NHC print.
std::string oneLine(const std::string& text);

}  // namespace distrun::doctor
