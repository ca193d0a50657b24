#include "gui/form_rows.h"

#include <QHBoxLayout>
#include <QLabel>

namespace starfish::gui {

QHBoxLayout* row_of(std::initializer_list<RowItem> items) {
  auto* row = new QHBoxLayout;
  for (const RowItem& item : items) {
    if (item.label) row->addWidget(new QLabel(item.label));
    row->addWidget(item.widget, item.stretch);
  }
  return row;
}

}  // namespace starfish::gui
