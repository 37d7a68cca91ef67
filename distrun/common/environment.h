#pragma once

#include <initializer_list>
#include <map>
#include <optional>
#include <string>

namespace distrun {

// A read-only view of environment variables: the seam between code that
// interprets a scheduler's variables and the process environment, so the
// interpretation is unit-tested with a plain map. Implementations are
// thread-compatible (const methods may be called concurrently).
class Environment {
 public:
  virtual ~Environment() = default;
  // The value of `name`, or nullopt when it is unset. An empty value is set.
  virtual std::optional<std::string> get(const std::string& name) const = 0;
  bool has(const std::string& name) const { return get(name).has_value(); }
  // The value of `name`, or `fallback` when unset.
  std::string getOr(const std::string& name, const std::string& fallback) const;
  // Every variable, by name: the base of a child's environment.
  virtual std::map<std::string, std::string> all() const = 0;
};

// The environment of this process, read at each call.
class ProcessEnvironment : public Environment {
 public:
  std::optional<std::string> get(const std::string& name) const override;
  std::map<std::string, std::string> all() const override;
};

// An environment held in a map, for tests and for building a child's
// environment.
class MapEnvironment : public Environment {
 public:
  MapEnvironment() = default;
  explicit MapEnvironment(std::map<std::string, std::string> vars) : vars_(std::move(vars)) {}
  MapEnvironment(std::initializer_list<std::pair<const std::string, std::string>> vars)
      : vars_(vars) {}
  std::optional<std::string> get(const std::string& name) const override;
  std::map<std::string, std::string> all() const override { return vars_; }
  void set(const std::string& name, const std::string& value) { vars_[name] = value; }
  void unset(const std::string& name) { vars_.erase(name); }
  const std::map<std::string, std::string>& vars() const { return vars_; }

 private:
  std::map<std::string, std::string> vars_;
};

// `top` laid over `base`: a name set in `top` hides the one in `base`.
// Holds references; both must outlive it.
class OverlayEnvironment : public Environment {
 public:
  OverlayEnvironment(const Environment& base, const Environment& top) : base_(base), top_(top) {}
  std::optional<std::string> get(const std::string& name) const override {
    if (auto value = top_.get(name)) return value;
    return base_.get(name);
  }
  std::map<std::string, std::string> all() const override {
    std::map<std::string, std::string> vars = top_.all();
    vars.merge(base_.all());  // keeps top's value where both have a name
    return vars;
  }

 private:
  const Environment& base_;
  const Environment& top_;
};

}  // namespace distrun
