from ..facts.service import FactService
from ..runtime import config
