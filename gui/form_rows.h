#pragma once
// A form row of several widgets side by side, each optionally preceded by a small label
// ("layers [ 96 ] hidden [ 12288 ]"): how the editors lay out related fields on one line.
#include <initializer_list>

class QHBoxLayout;
class QWidget;

namespace starfish::gui {

struct RowItem {
  const char* label;  // shown before the widget; nullptr for none
  QWidget* widget;
  int stretch = 0;    // QBoxLayout's stretch factor
};

QHBoxLayout* row_of(std::initializer_list<RowItem> items);

}  // namespace starfish::gui
