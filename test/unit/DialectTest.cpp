// placeholder, replaced below
#include <gtest/gtest.h>
TEST(Dialect, Placeholder) {}
