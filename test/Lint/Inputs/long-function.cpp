// Input of function-length.test: one function of 121 lines between short
// ones. Braces in comments { and strings "}" do not count.
namespace demo {
struct Small {
  int get() const { return 1; }
};

int shortOne(int x) {
  auto lambda = [&](int y) { return y + 1; };
  return lambda(x);
}

int longOne(int x) {
  int y = x;
  y += 1; y += 1; y += 1; y += 1; y += 1; y += 1; y += 1; y += 1; y += 1;
  const char *s = "}}}";
  (void)s;
  // }
  {
    y += 2;
  }
  y += 1;
  y += 1;
  y += 1;
  y += 1;
  y += 1;
  y += 1;
  y += 1;
  y += 1;
  y += 1;
  y += 1;
  y += 1;
  y += 1;
  y += 1;
  y += 1;
  y += 1;
  y += 1;
  y += 1;
  y += 1;
  y += 1;
  y += 1;
  y += 1;
  y += 1;
  y += 1;
  y += 1;
  y += 1;
  y += 1;
  y += 1;
  y += 1;
  y += 1;
  y += 1;
  y += 1;
  y += 1;
  y += 1;
  y += 1;
  y += 1;
  y += 1;
  y += 1;
  y += 1;
  y += 1;
  y += 1;
  y += 1;
  y += 1;
  y += 1;
  y += 1;
  y += 1;
  y += 1;
  y += 1;
  y += 1;
  y += 1;
  y += 1;
  y += 1;
  y += 1;
  y += 1;
  y += 1;
  y += 1;
  y += 1;
  y += 1;
  y += 1;
  y += 1;
  y += 1;
  y += 1;
  y += 1;
  y += 1;
  y += 1;
  y += 1;
  y += 1;
  y += 1;
  y += 1;
  y += 1;
  y += 1;
  y += 1;
  y += 1;
  y += 1;
  y += 1;
  y += 1;
  y += 1;
  y += 1;
  y += 1;
  y += 1;
  y += 1;
  y += 1;
  y += 1;
  y += 1;
  y += 1;
  y += 1;
  y += 1;
  y += 1;
  y += 1;
  y += 1;
  y += 1;
  y += 1;
  y += 1;
  y += 1;
  y += 1;
  y += 1;
  y += 1;
  y += 1;
  y += 1;
  y += 1;
  y += 1;
  y += 1;
  y += 1;
  y += 1;
  y += 1;
  y += 1;
  y += 1;
  y += 1;
  y += 1;
  y += 1;
  y += 1;
  y += 1;
  y += 1;
  y += 1;
  return y;
}

int lastOne() { return 0; }
} // namespace demo
