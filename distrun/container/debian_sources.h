#pragma once

// Where `distrun wrap --apt` gets Debian packages by default: the release
// and the apt sources this machine is configured with, so a build works
// with the site's own Debian mirror (and without the internet when that
// mirror is local).
#include <string>
#include <vector>

namespace distrun::container {

// VERSION_CODENAME from the text of an os-release file ("bookworm"); ""
// when it has none. Quotes around the value are removed.
std::string codenameFromOsRelease(const std::string& text);

// The host's release codename, from /etc/os-release (else
// /usr/lib/os-release); "" when neither names one.
std::string hostCodename();

// Whether an apt sources file (one-line `deb URI SUITE COMPONENTS` or
// deb822 `Suites: A B`) has an entry for `suite`: a line, not a comment,
// with `suite` as one of its words.
bool sourcesNameSuite(const std::string& text, const std::string& suite);

// The apt sources files under `aptDir` (sources.list, then
// sources.list.d/*.list and *.sources in name order) that have an entry for
// `suite`: given to mmdebstrap as its mirrors, which pastes each file into
// the new system's sources. Third-party sources for other suites are left
// out. Empty when none names `suite` (mmdebstrap then uses
// deb.debian.org). Unreadable files are skipped.
std::vector<std::string> hostSourcesFor(const std::string& suite,
                                        const std::string& aptDir = "/etc/apt");

}  // namespace distrun::container
