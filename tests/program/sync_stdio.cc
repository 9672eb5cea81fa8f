// sync_stdio.cc - a clean C++ program that unties the standard streams
// from stdio (issue 9 point 9): libstdc++ then allocates buffers for cin,
// cout, cerr, clog and their wide twins, which its own stream objects hold.
// HEAPCHECK=draconian must report nothing.
#include <iostream>
#include <string>

int main(int argc, char **) {
  std::ios::sync_with_stdio(false);
  std::cout << "sync_stdio: " << std::string(argc, 'x') << std::endl;
  std::cerr << "sync_stdio: stderr" << std::endl;
  std::wcout << L"sync_stdio: wide" << std::endl;
  return 0;
}
