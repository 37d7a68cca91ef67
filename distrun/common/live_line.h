#pragma once

#include <functional>
#include <iosfwd>
#include <optional>
#include <string>
#include <string_view>

#include "distrun/common/environment.h"

namespace distrun {

// How a command shows its live status (`--status`; docs/observability.md,
// "Live progress"): kLine, one line redrawn in place under the scrolling
// output of a terminal; kPlain, whole lines at a low rate (logs, pipes,
// batch output files); kNone, nothing. kAuto: kLine on a terminal, else
// kPlain (resolveStatusMode).
enum class StatusMode { kAuto, kLine, kPlain, kNone };

// "auto", "line", "plain", "none"; UsageError "--status 'X': expected
// auto, line, plain or none" otherwise (`flag` names the flag).
StatusMode parseStatusMode(const std::string& text, const std::string& flag = "--status");

// `mode`, with kAuto made kLine when `terminal`, else kPlain.
StatusMode resolveStatusMode(StatusMode mode, bool terminal);

// Whether this process's stdout and stderr are both terminals and $TERM is
// not "dumb": where a line may be redrawn in place under the output.
bool consoleIsTerminal(const Environment& env);

// The width of the terminal on `fd` (TIOCGWINSZ), else $COLUMNS, else 80.
int terminalColumns(int fd, const Environment& env);

// `text` in at most `width` characters (UTF-8 code points): its parts,
// separated by two spaces, dropped from the end while it is too long;
// the first part cut when even it is.
std::string fitToWidth(std::string_view text, int width);

// What a LiveLine does; kAuto must have been resolved.
struct LiveLineOptions {
  StatusMode mode = StatusMode::kNone;
  std::function<int()> columns;   // kLine: the terminal's width, read at each draw
  std::function<double()> now;    // seconds, any origin
  double redrawInterval = 0.1;    // kLine: at most 10 redraws a second
  double plainInterval = 30;      // kPlain: at most one line per this many seconds
  bool plainFirstAtOnce = false;  // kPlain: the first line at once, else after plainInterval
  std::string plainPrefix;        // kPlain: put before each line ("distrun: ")
};

// One live status line on `out` (a terminal's stream in kLine mode).
// kLine: the text is drawn in place ("\r", the text fitted to one column
// less than the terminal, "\x1b[K") on the last line, where the cursor
// stays; clear() erases it ("\r\x1b[K") before anything else is written to
// the terminal, and the next tick() or show() draws it again at once; new
// text is drawn at most once per redrawInterval. kPlain: show() and tick()
// print the text as a whole line when plainInterval passed since the
// last one (or the start). kNone: writes nothing. The destructor erases
// the line. Not thread-safe; `out` must outlive it.
class LiveLine {
 public:
  LiveLine(std::ostream& out, LiveLineOptions options);
  ~LiveLine();
  LiveLine(const LiveLine&) = delete;
  LiveLine& operator=(const LiveLine&) = delete;

  // Sets the text (empty: hide()); `force` draws or prints it at once.
  void show(std::string text, bool force = false);
  // Erases the line from the screen, keeping its text for the next tick().
  void clear();
  // Erases the line and forgets its text.
  void hide();
  // Draws the text that waits (erased by clear(), or held back by the
  // redraw interval) once due; kPlain: prints it once plainInterval passed.
  void tick();
  // When tick() will next have something to do; nullopt: nothing waits.
  std::optional<double> nextDue() const;
  bool onScreen() const { return onScreen_; }
  StatusMode mode() const { return o_.mode; }

 private:
  void draw();
  void print();

  std::ostream& out_;
  LiveLineOptions o_;
  std::string text_;
  bool onScreen_ = false;
  bool pending_ = false;  // kLine: text_ differs from what is drawn
  double lastDraw_ = 0;
  std::optional<double> lastPlain_;
};

}  // namespace distrun
